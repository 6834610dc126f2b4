package acl

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ktoolhq/ktool/internal/acl"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
)

func run(t *testing.T, env *cmdtest.Env, args ...string) string {
	t.Helper()
	env.Out.Reset()
	cmd := NewCommand(env.F)
	cmd.SetArgs(args)
	cmd.SetContext(cmdtest.Ctx(t))
	if err := cmd.Execute(); err != nil {
		t.Fatalf("acl %s: %v", strings.Join(args, " "), err)
	}
	return env.Out.String()
}

func listed(t *testing.T, out string) []Binding {
	t.Helper()
	var bs []Binding
	if err := json.Unmarshal([]byte(out), &bs); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return bs
}

// TestAgainstKfake: create, list, check and delete over the Kafka protocol
// against franz-go's kfake, which serves the ACL APIs.
func TestAgainstKfake(t *testing.T) {
	c := cmdtest.Cluster(t)
	env := cmdtest.NewEnv(t, c.ListenAddrs())

	out := run(t, env, "create", "--allow-principal", "User:orders-app", "--producer", "--topic", "orders-", "--resource-pattern-type", "prefixed", "--dry-run", "-o", "json")
	if bs := listed(t, out); len(bs) != 3 {
		t.Fatalf("dry run: %+v", bs)
	}
	if bs := listed(t, run(t, env, "list", "-o", "json")); len(bs) != 0 {
		t.Fatalf("dry run created %+v", bs)
	}
	run(t, env, "create", "--allow-principal", "User:orders-app", "--producer", "--topic", "orders-", "--resource-pattern-type", "prefixed")
	run(t, env, "create", "--allow-principal", "User:billing", "--consumer", "--topic", "orders-", "--resource-pattern-type", "prefixed", "--group", "billing")
	run(t, env, "create", "--deny-principal", "User:billing", "--operation", "Read", "--topic", "orders-secret")
	if bs := listed(t, run(t, env, "list", "-o", "json")); len(bs) != 7 {
		t.Fatalf("listed %d ACLs, want 7: %+v", len(bs), bs)
	}
	// (kfake answers no MATCH filter; broker/authz_test.go's TestAclAPIs checks MATCH on ktool's broker.)
	if bs := listed(t, run(t, env, "list", "--topic", "orders-", "--resource-pattern-type", "prefixed", "-o", "json")); len(bs) != 5 {
		t.Fatalf("prefixed orders-: %+v", bs)
	}
	if bs := listed(t, run(t, env, "list", "--principal", "User:billing", "-o", "json")); len(bs) != 4 {
		t.Fatalf("billing: %+v", bs)
	}

	var v Verdict
	check := func(args ...string) Verdict {
		t.Helper()
		v = Verdict{}
		if err := json.Unmarshal([]byte(run(t, env, append([]string{"check", "-o", "json"}, args...)...)), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := check("User:billing", "Read", "Topic:orders-eu"); !v.Allowed || v.DecidedBy == nil || v.DecidedBy.PatternType != "PREFIXED" {
		t.Fatalf("billing reads orders-eu: %+v", v)
	}
	if v := check("User:billing", "Read", "Topic:orders-secret"); v.Allowed || v.DecidedBy == nil || v.DecidedBy.Permission != "Deny" {
		t.Fatalf("billing reads orders-secret: %+v", v)
	}
	if v := check("User:billing", "Write", "Topic:orders-eu"); v.Allowed || v.Reason != acl.NoMatch.String() {
		t.Fatalf("billing writes orders-eu: %+v", v)
	}
	if v := check("User:orders-app", "Describe", "Topic:orders-eu"); !v.Allowed {
		t.Fatalf("orders-app describes orders-eu: %+v", v)
	}
	if v := check("User:root", "Alter", "Cluster", "--super-user", "User:root"); !v.Allowed || v.Reason != acl.SuperUser.String() {
		t.Fatalf("super user: %+v", v)
	}
	if out := run(t, env, "check", "User:billing", "Read", "Topic:orders-secret"); !strings.Contains(out, "DENIED") || !strings.Contains(out, "Decided by: Deny User:billing Read on Topic:orders-secret (LITERAL)") {
		t.Fatalf("table check:\n%s", out)
	}

	out = run(t, env, "delete", "--topic", "orders-", "--resource-pattern-type", "prefixed", "--allow-principal", "User:billing", "--dry-run", "-o", "json")
	if bs := listed(t, out); len(bs) != 2 {
		t.Fatalf("would delete %+v", bs)
	}
	if bs := listed(t, run(t, env, "list", "-o", "json")); len(bs) != 7 {
		t.Fatalf("dry-run deleted: %d left", len(bs))
	}
	if bs := listed(t, run(t, env, "delete", "--topic", "orders-", "--resource-pattern-type", "prefixed", "--allow-principal", "User:billing", "-o", "json")); len(bs) != 2 {
		t.Fatalf("deleted %+v", bs)
	}
	if bs := listed(t, run(t, env, "list", "-o", "json")); len(bs) != 5 {
		t.Fatalf("left %+v", bs)
	}
}

func TestBindingsFromFlags(t *testing.T) {
	fl := Flags{AllowPrincipals: []string{"User:a"}, Topics: []string{"t"}, PatternType: "literal"}
	bs, err := fl.Bindings()
	if err != nil || len(bs) != 1 || bs[0].Operation != acl.OpAll || bs[0].Host != "*" {
		t.Fatalf("default operation: %+v %v", bs, err)
	}
	for _, bad := range []Flags{
		{Topics: []string{"t"}, PatternType: "literal"},
		{AllowPrincipals: []string{"alice"}, Topics: []string{"t"}, PatternType: "literal"},
		{AllowPrincipals: []string{"User:a"}, PatternType: "literal"},
		{AllowPrincipals: []string{"User:a"}, Topics: []string{"t"}, PatternType: "match"},
		{AllowPrincipals: []string{"User:a"}, Topics: []string{"t"}, PatternType: "literal", Consumer: true},
		{AllowPrincipals: []string{"User:a"}, Topics: []string{"t"}, PatternType: "literal", Operations: []string{"fly"}},
	} {
		if _, err := bad.Bindings(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
