package compat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEveryCommandOverSASLSSL runs ktool's cluster commands with only a Kafka
// client.properties (SASL_SSL, SCRAM-SHA-512, PKCS12 truststore) against the
// broker's SASL_SSL listener (ACLs on): each must authenticate and succeed, and the same
// command without the file must fail to connect (franz-go sees a plaintext
// handshake closed by a TLS listener and asks "is TLS missing?").
func TestEveryCommandOverSASLSSL(t *testing.T) {
	bin, err := ktool()
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t, 3*time.Minute)
	// With the authorizer on, `acl list` answers (without it Kafka's answer is
	// SECURITY_DISABLED); bob, and ANONYMOUS on the PLAINTEXT listener the
	// setup uses, are super users.
	s := startSASL(ctx, t, "authorizer.class.name=kafka.security.authorizer.AclAuthorizer", "super.users=User:bob;User:ANONYMOUS")
	props := filepath.Join(s.dir, "client.properties")
	if err := os.WriteFile(props, []byte(strings.Join([]string{
		"security.protocol=SASL_SSL",
		"sasl.mechanism=SCRAM-SHA-512",
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" password="bob-secret";`,
		"ssl.truststore.type=PKCS12",
		"ssl.truststore.location=" + s.truststoreP12,
		"ssl.truststore.password=changeit",
	}, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The bootstrap comes from KTOOL_BROKERS, so that `partition move`'s own
	// --brokers (target broker ids) does not hide it.
	env := []string{"KTOOL_BROKERS=" + s.saslSSL, "KTOOL_CONFIG=" + filepath.Join(s.dir, "no-config.yaml")}

	for _, tc := range []struct {
		args  []string
		stdin string
		want  string // in stdout
	}{
		{args: []string{"topic", "create", "sec-all", "--partitions", "2", "--replication-factor", "1"}},
		{args: []string{"topic", "list"}, want: "sec-all"},
		{args: []string{"topic", "describe", "sec-all"}, want: "sec-all"},
		{args: []string{"produce", "sec-all"}, stdin: "one\ntwo\nthree\n"},
		{args: []string{"consume", "sec-all", "--group", "sec-group", "--count", "3"}, want: "three"},
		{args: []string{"group", "list"}, want: "sec-group"},
		{args: []string{"group", "describe", "sec-group"}, want: "sec-all"},
		{args: []string{"config", "describe", "topic", "sec-all", "--all"}, want: "retention.ms"},
		{args: []string{"offsets", "sec-all"}, want: "sec-all"},
		{args: []string{"api-versions"}, want: "Produce"},
		{args: []string{"acl", "list"}},
		{args: []string{"user", "list"}, want: "bob"},
		{args: []string{"elect", "--preferred", "--all-topic-partitions", "--dry-run"}},
		{args: []string{"cluster", "health"}},
		{args: []string{"log-dirs", "describe"}, want: "sec-all"},
		{args: []string{"partition", "move", "--generate", "--topics", "sec-all", "--broker-list", "0"}, want: "sec-all"},
	} {
		name := strings.Join(tc.args, " ")
		withProps := append([]string{"--client-config", props}, tc.args...)
		stdout, stderr, err := runEnvErr(ctx, env, []byte(tc.stdin), bin, withProps...)
		if err != nil {
			t.Fatalf("ktool %s with client.properties over SASL_SSL: %v\nstdout:\n%s\nstderr:\n%s", name, err, tail(string(stdout), 20), tail(string(stderr), 20))
		}
		if !strings.Contains(string(stdout), tc.want) {
			t.Errorf("ktool %s: stdout lacks %q:\n%s", name, tc.want, tail(string(stdout), 20))
		}
		without := append([]string{"--timeout", "3s"}, tc.args...)
		stdout, stderr, err = runEnvErr(ctx, env, []byte(tc.stdin), bin, without...)
		if err == nil || !strings.Contains(string(stderr), "is TLS missing?") {
			t.Errorf("ktool %s without client.properties: %v, want a plaintext client turned away by the SASL_SSL listener:\nstdout:\n%s\nstderr:\n%s", name, err, tail(string(stdout), 10), tail(string(stderr), 10))
		}
	}
}
