package compat

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// saslCase is one protocol and mechanism a client logs in with.
type saslCase struct {
	proto, mech, user, pass string
}

// saslCases are PLAIN (alice, from the broker's JAAS) and SCRAM-SHA-256/512
// (bob, made with `ktool user create`) over SASL_PLAINTEXT and SASL_SSL.
var saslCases = []saslCase{
	{"SASL_PLAINTEXT", "PLAIN", "alice", "alice-secret"},
	{"SASL_PLAINTEXT", "SCRAM-SHA-256", "bob", "bob-secret"},
	{"SASL_PLAINTEXT", "SCRAM-SHA-512", "bob", "bob-secret"},
	{"SASL_SSL", "PLAIN", "alice", "alice-secret"},
	{"SASL_SSL", "SCRAM-SHA-256", "bob", "bob-secret"},
	{"SASL_SSL", "SCRAM-SHA-512", "bob", "bob-secret"},
}

// startSASL is startSecure with bob's SCRAM credentials (both mechanisms).
func startSASL(ctx context.Context, t *testing.T, extra ...string) *secureBroker {
	t.Helper()
	s := startSecure(t, extra...)
	bin, err := ktool()
	if err != nil {
		t.Fatal(err)
	}
	pw := filepath.Join(s.dir, "bob.pw")
	if err := os.WriteFile(pw, []byte("bob-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run(ctx, t, nil, bin, "--brokers", s.Addr(), "user", "create", "bob", "--password-file", pw)
	return s
}

// addr and ca are the listener and CA file ('-' for none) of a protocol.
func (s *secureBroker) saslTarget(proto string) (addr, ca string) {
	if proto == "SASL_SSL" {
		return s.saslSSL, s.caFile
	}
	return s.saslPlain, "-"
}

// checkSecureRun checks a client's produce-then-consume lines: n records sent
// without error and the same n keys and values read back.
func checkSecureRun(t *testing.T, name string, lines []jsLine, mech string, n int) {
	t.Helper()
	sent, got := 0, map[string]string{}
	done := false
	for _, l := range lines {
		switch l.Step {
		case "sent":
			if l.ErrorCode != 0 {
				t.Errorf("%s: produce answered error code %d", name, l.ErrorCode)
			}
			sent++
		case "message":
			got[deref(l.Key)] = deref(l.Value)
		case "done":
			done = l.Count == n
		}
	}
	if sent == 0 || !done || len(got) != n {
		t.Fatalf("%s: %d sent lines, %d distinct records read, done=%v; want %d", name, sent, len(got), done, n)
	}
	for i := 0; i < n; i++ {
		if k, v := fmt.Sprintf("k%d", i), fmt.Sprintf("%s-%d", mech, i); got[k] != v {
			t.Errorf("%s: record %s = %q, want %q", name, k, got[k], v)
		}
	}
}

// TestKafkajsSASL: kafkajs produces and consumes (in a group) over
// SASL_PLAINTEXT and SASL_SSL with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, and
// each login with a wrong password is refused with kafkajs's SASL
// authentication error.
func TestKafkajsSASL(t *testing.T) {
	js := newKafkajs(t)
	ctx := testCtx(t, 3*time.Minute)
	s := startSASL(ctx, t)
	const n = 5
	for i, tc := range saslCases {
		name := "kafkajs " + tc.proto + "/" + tc.mech
		topic := fmt.Sprintf("js-sasl-%d", i)
		createTopic(t, s.Addr(), topic, 2, 1, nil)
		addr, ca := s.saslTarget(tc.proto)
		stdout, stderr, err := runErr(ctx, nil, js.node, js.script, "secure", addr, topic, tc.mech, tc.user, tc.pass, ca, fmt.Sprint(n))
		if err != nil {
			t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", name, err, stdout, tail(string(stderr), 20))
		}
		checkSecureRun(t, name, parseJSLines(t, stdout), tc.mech, n)

		stdout, _, err = runErr(ctx, nil, js.node, js.script, "secure", addr, topic, tc.mech, tc.user, "wrong", ca, "1")
		lines := parseJSLines(t, stdout)
		if err == nil || len(lines) == 0 || lines[len(lines)-1].Step != "error" ||
			lines[len(lines)-1].Error.Name != "KafkaJSSASLAuthenticationError" {
			t.Fatalf("%s with a wrong password: err %v, output %s", name, err, stdout)
		}
	}
}

// needConfluentKafka returns a python3 that imports confluent_kafka (the
// distribution's python3-confluent-kafka lives under /usr/bin/python3 even when
// another python3 comes first on PATH), or skips the test.
func needConfluentKafka(t *testing.T) string {
	t.Helper()
	var tried []string
	for _, name := range []string{"python3", "/usr/bin/python3"} {
		p, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		if exec.Command(p, "-c", "import confluent_kafka").Run() == nil {
			return p
		}
		tried = append(tried, p)
	}
	t.Skipf("no python3 with confluent_kafka (tried %v): install python3-confluent-kafka (test/compat/setup.sh); confluent-kafka-python compatibility was NOT tested", tried)
	return ""
}

// TestConfluentKafkaPythonSASL: confluent-kafka-python produces and consumes
// (in a group) over SASL_PLAINTEXT and SASL_SSL with PLAIN, SCRAM-SHA-256 and
// SCRAM-SHA-512, and a wrong password is refused as an authentication failure.
func TestConfluentKafkaPythonSASL(t *testing.T) {
	py := needConfluentKafka(t)
	script, err := filepath.Abs(filepath.Join("confluent", "secure.py"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t, 3*time.Minute)
	s := startSASL(ctx, t)
	const n = 5
	for i, tc := range saslCases {
		name := "confluent-kafka-python " + tc.proto + "/" + tc.mech
		topic := fmt.Sprintf("py-sasl-%d", i)
		createTopic(t, s.Addr(), topic, 2, 1, nil)
		addr, ca := s.saslTarget(tc.proto)
		stdout, stderr, err := runErr(ctx, nil, py, script, addr, topic, tc.proto, tc.mech, tc.user, tc.pass, ca, fmt.Sprint(n))
		if err != nil {
			t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", name, err, stdout, tail(string(stderr), 20))
		}
		checkSecureRun(t, name, parseJSLines(t, stdout), tc.mech, n)

		stdout, stderr, err = runErr(ctx, nil, py, script, addr, topic, tc.proto, tc.mech, tc.user, "wrong", ca, "1")
		if err == nil || !strings.Contains(strings.ToLower(string(stdout)), "authentication") {
			t.Fatalf("%s with a wrong password: err %v\nstdout:\n%s\nstderr:\n%s", name, err, stdout, tail(string(stderr), 10))
		}
	}
}
