package compat

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEveryCommandOverSASLSSL runs ktool's cluster commands with only a Kafka
// client.properties (SASL_SSL, SCRAM-SHA-512, PKCS12 truststore) against the
// broker's SASL_SSL listener (ACLs on): each must authenticate and succeed, and the same
// command without the file must fail to connect (franz-go sees a plaintext
// handshake closed by a TLS listener and asks "is TLS missing?"). Besides the
// admin commands: perf produce (transactional) and perf consume, txn list and
// describe, quota set and list, and ktool ui, whose /api/cluster must answer
// from the secured listener.
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
		{args: []string{"perf", "produce", "--topic", "sec-perf", "--num-records", "300", "--record-size", "50", "--partitions", "1",
			"--replication-factor", "1", "--transactional", "--transaction-size", "100", "--transactional-id", "sec-perf-txn", "-o", "json"},
			want: `"transactions": 3`},
		{args: []string{"perf", "consume", "--topic", "sec-perf", "--num-records", "300", "-o", "json"}, want: `"records": 300`},
		{args: []string{"txn", "list"}, want: "sec-perf-txn"},
		{args: []string{"txn", "describe", "sec-perf-txn"}, want: "CompleteCommit"},
		{args: []string{"quota", "set", "--user", "carol", "--producer-byte-rate", "1048576"}},
		{args: []string{"quota", "list", "--user", "carol"}, want: "1048576"},
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

	// ktool ui serves until stopped: its API answers the cluster page from
	// the SASL_SSL listener; without the file the page reports the refusal.
	status, body, stderr := uiClusterPage(ctx, t, env, bin, "--client-config", props)
	var page struct {
		BrokersTotal int      `json:"brokers_total"`
		BrokersUp    int      `json:"brokers_up"`
		Errors       []string `json:"errors"`
	}
	if err := json.Unmarshal(body, &page); status != http.StatusOK || err != nil || page.BrokersTotal != 1 || page.BrokersUp != 1 || len(page.Errors) > 0 {
		t.Errorf("ktool ui with client.properties: /api/cluster answered %d %s (%v)\nstderr:\n%s", status, body, err, tail(stderr, 10))
	}
	status, body, stderr = uiClusterPage(ctx, t, env, bin, "--timeout", "3s")
	if status == http.StatusOK || !strings.Contains(string(body), "is TLS missing?") || !strings.Contains(stderr, "is TLS missing?") {
		t.Errorf("ktool ui without client.properties: /api/cluster answered %d %s, want the SASL_SSL listener's refusal\nstderr:\n%s", status, body, tail(stderr, 10))
	}
}

// uiClusterPage runs `ktool ui` on a free loopback port, reads /api/cluster
// once it serves, and stops it.
func uiClusterPage(ctx context.Context, t *testing.T, env []string, bin string, args ...string) (status int, body []byte, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, "ui", "--read-only", "--listen", "127.0.0.1:0")...)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	serving := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if _, rest, ok := strings.Cut(sc.Text(), "serving http://"); ok {
				serving <- strings.TrimSuffix(strings.Fields(rest)[0], "/")
			}
		}
	}()
	stop := func() string {
		_ = cmd.Process.Signal(os.Interrupt)
		<-done
		_ = cmd.Wait()
		return strings.Join(lines, "\n")
	}
	var addr string
	select {
	case addr = <-serving:
	case <-done:
		t.Fatalf("ktool ui exited before serving:\n%s", stop())
	case <-ctx.Done():
		t.Fatalf("ktool ui did not serve within a minute:\n%s", stop())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/api/cluster", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /api/cluster: %v\n%s", err, stop())
	}
	body, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body, stop()
}

// TestCommandsWithClientKeystore: a client.properties holding ssl.keystore.*
// gives ktool's commands a client certificate for a listener with
// ssl.client.auth=required: a PEM keystore (key and chain in one file) and a
// PKCS12 keystore both work (topic create, produce, consume, topic list); the
// same file without the keystore is refused by the handshake, and a wrong
// PKCS12 password is reported before connecting.
func TestCommandsWithClientKeystore(t *testing.T) {
	bin, err := ktool()
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t, 3*time.Minute)
	s := startSecure(t)
	key, err := os.ReadFile(s.clientKey)
	if err != nil {
		t.Fatal(err)
	}
	crt, err := os.ReadFile(s.clientCert)
	if err != nil {
		t.Fatal(err)
	}
	pemStore := filepath.Join(s.dir, "client-keystore.pem")
	if err := os.WriteFile(pemStore, append(key, crt...), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(name string, lines ...string) string {
		p := filepath.Join(s.dir, name)
		base := []string{"security.protocol=SSL", "ssl.truststore.type=PEM", "ssl.truststore.location=" + s.caFile}
		if err := os.WriteFile(p, []byte(strings.Join(append(base, lines...), "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := []string{"KTOOL_BROKERS=" + s.ssl, "KTOOL_CONFIG=" + filepath.Join(s.dir, "no-config.yaml")}
	for _, tc := range []struct {
		name  string
		props string
	}{
		{"PEM", write("pem.properties", "ssl.keystore.type=PEM", "ssl.keystore.location="+pemStore)},
		{"PKCS12", write("p12.properties", "ssl.keystore.type=PKCS12", "ssl.keystore.location="+s.keystoreP12, "ssl.keystore.password=changeit")},
	} {
		topic := "mtls-" + strings.ToLower(tc.name)
		for _, c := range []struct {
			args  []string
			stdin string
			want  string
		}{
			{args: []string{"topic", "create", topic, "--partitions", "1", "--replication-factor", "1"}},
			{args: []string{"produce", topic}, stdin: "a\nb\n"},
			{args: []string{"consume", topic, "--count", "2"}, want: "b"},
			{args: []string{"topic", "list"}, want: topic},
		} {
			stdout, stderr, err := runEnvErr(ctx, env, []byte(c.stdin), bin, append([]string{"--client-config", tc.props}, c.args...)...)
			if err != nil {
				t.Fatalf("%s keystore: ktool %s: %v\nstdout:\n%s\nstderr:\n%s", tc.name, strings.Join(c.args, " "), err, tail(string(stdout), 10), tail(string(stderr), 10))
			}
			if !strings.Contains(string(stdout), c.want) {
				t.Errorf("%s keystore: ktool %s: stdout lacks %q:\n%s", tc.name, strings.Join(c.args, " "), c.want, tail(string(stdout), 10))
			}
		}
	}
	trustOnly := write("trust-only.properties")
	if _, stderr, err := runEnvErr(ctx, env, nil, bin, "--timeout", "3s", "--client-config", trustOnly, "topic", "list"); err == nil {
		t.Errorf("topic list without a client certificate succeeded on a listener with ssl.client.auth=required\nstderr:\n%s", tail(string(stderr), 10))
	}
	badPass := write("bad-pass.properties", "ssl.keystore.type=PKCS12", "ssl.keystore.location="+s.keystoreP12, "ssl.keystore.password=wrong")
	_, stderr, err := runEnvErr(ctx, env, nil, bin, "--timeout", "3s", "--client-config", badPass, "topic", "list")
	if err == nil || !strings.Contains(string(stderr), "PKCS12 keystore") {
		t.Errorf("a wrong PKCS12 password: %v, want an error naming the keystore\nstderr:\n%s", err, tail(string(stderr), 10))
	}
}
