package authz

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/broker/coord/embedded"
	"github.com/ktoolhq/ktool/internal/acl"
)

func session(t *testing.T, srv *embedded.Server) coord.Store {
	t.Helper()
	s, err := srv.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestKafkaLayout: the znodes and JSON are Kafka's (ZkAclStore, ZkAclChangeStore).
func TestKafkaLayout(t *testing.T) {
	srv, err := embedded.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	ctx := context.Background()
	s := session(t, srv)
	a := New(nil, false, slog.New(slog.DiscardHandler))
	errs := a.Create(ctx, s, []acl.Binding{
		{Resource: acl.Resource{Type: acl.ResourceTopic, Name: "orders", Pattern: acl.PatternLiteral},
			Entry: acl.Entry{Principal: "User:alice", Host: "*", Operation: acl.OpRead, Permission: acl.PermAllow}},
		{Resource: acl.Resource{Type: acl.ResourceGroup, Name: "orders-", Pattern: acl.PatternPrefixed},
			Entry: acl.Entry{Principal: "User:bob", Host: "10.0.0.1", Operation: acl.OpIdempotentWrite, Permission: acl.PermDeny}},
	})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	check := func(path string, want any) {
		t.Helper()
		data, _, err := s.Get(ctx, path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var got any
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatalf("%s: %q: %v", path, data, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s = %s, want %v", path, data, want)
		}
	}
	check("/kafka-acl/Topic/orders", map[string]any{"version": 1.0, "acls": []any{
		map[string]any{"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"}}})
	check("/kafka-acl-extended/prefixed/Group/orders-", map[string]any{"version": 1.0, "acls": []any{
		map[string]any{"principal": "User:bob", "permissionType": "Deny", "operation": "IdempotentWrite", "host": "10.0.0.1"}}})
	names, _, err := s.Children(ctx, "/kafka-acl-changes")
	if err != nil || len(names) != 1 || names[0] != "acl_changes_0000000000" {
		t.Fatalf("literal changes %v %v", names, err)
	}
	if data, _, _ := s.Get(ctx, "/kafka-acl-changes/"+names[0]); string(data) != "Topic:orders" {
		t.Fatalf("literal change %q", data)
	}
	names, _, err = s.Children(ctx, "/kafka-acl-extended-changes")
	if err != nil || len(names) != 1 {
		t.Fatalf("extended changes %v %v", names, err)
	}
	data, _, _ := s.Get(ctx, "/kafka-acl-extended-changes/"+names[0])
	var ch map[string]any
	if err := json.Unmarshal(data, &ch); err != nil || !reflect.DeepEqual(ch, map[string]any{"version": 1.0, "resourceType": "Group", "name": "orders-", "patternType": "PREFIXED"}) {
		t.Fatalf("extended change %s %v", data, err)
	}

	// A second authorizer (another broker) loads both and follows new changes.
	other := New([]string{"User:admin"}, false, slog.New(slog.DiscardHandler))
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go other.Run(runCtx, session(t, srv))
	alice := acl.Principal{Type: "User", Name: "alice"}
	waitFor := func(what string, f func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !f() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 5s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor("initial load", func() bool { return other.Authorize(alice, "1.2.3.4", acl.OpDescribe, acl.ResourceTopic, "orders") })
	if other.Authorize(acl.Principal{Type: "User", Name: "bob"}, "10.0.0.1", acl.OpIdempotentWrite, acl.ResourceGroup, "orders-1") {
		t.Fatal("bob allowed despite DENY")
	}
	res := a.Delete(ctx, s, []acl.Filter{{Type: acl.ResourceTopic, Pattern: acl.PatternAny, Operation: acl.OpAny, Permission: acl.PermAny}})
	if res[0].Err != nil || len(res[0].Deleted) != 1 {
		t.Fatalf("delete %+v", res)
	}
	if ok, _, _ := s.Exists(ctx, "/kafka-acl/Topic/orders"); ok {
		t.Fatal("empty resource znode left behind")
	}
	waitFor("deletion", func() bool { return !other.Authorize(alice, "1.2.3.4", acl.OpDescribe, acl.ResourceTopic, "orders") })
	// Filters select as Kafka's, from the cache.
	if got := other.Describe(acl.Filter{Type: acl.ResourceAny, Pattern: acl.PatternAny, Operation: acl.OpAny, Permission: acl.PermAny}); len(got) != 1 || got[0].Principal != "User:bob" {
		t.Fatalf("describe %+v", got)
	}
}

func TestEnabled(t *testing.T) {
	for in, want := range map[string]bool{"": false, ClassName: true, "acl": true} {
		if got, err := Enabled(in); err != nil || got != want {
			t.Errorf("Enabled(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := Enabled("com.example.Custom"); err == nil {
		t.Error("unknown authorizer class accepted")
	}
}
