package compat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ktoolhq/ktool/internal/brokerproc"
	"github.com/ktoolhq/ktool/internal/brokerproc/proctest"
	"github.com/ktoolhq/ktool/internal/certgen"
	"github.com/ktoolhq/ktool/internal/zktest"
)

// secureBroker is a `ktool broker start` child with a listener of every
// security protocol, and the files clients need; extra (key=value) are more
// broker settings.
type secureBroker struct {
	*broker
	dir                        string
	caFile                     string
	clientCert, clientKey      string
	saslPlain, saslSSL, ssl    string // addresses
	truststoreP12, keystoreP12 string
}

func freeAddr(t *testing.T) string {
	t.Helper()
	p, err := brokerproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
}

func startSecure(t *testing.T, extra ...string) *secureBroker {
	t.Helper()
	s := &secureBroker{dir: t.TempDir()}
	ca, err := certgen.NewCA("compat-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if s.caFile, _, s.truststoreP12, err = ca.WriteCA(s.dir, "changeit"); err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Sign(certgen.Options{CommonName: "broker", Hosts: []string{"127.0.0.1", "localhost"}})
	if err != nil {
		t.Fatal(err)
	}
	sf, err := srv.WriteFiles(s.dir, "broker", ca, "changeit")
	if err != nil {
		t.Fatal(err)
	}
	cl, err := ca.Sign(certgen.Options{CommonName: "kcat-client", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := cl.WriteFiles(s.dir, "client", ca, "changeit")
	if err != nil {
		t.Fatal(err)
	}
	s.clientCert, s.clientKey, s.keystoreP12 = cf.Cert, cf.Key, cf.Keystore
	s.saslPlain, s.saslSSL, s.ssl = freeAddr(t), freeAddr(t), freeAddr(t)
	port, err := brokerproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	plain := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	bin, err := ktool()
	if err != nil {
		t.Fatal(err)
	}
	overrides := []string{
		"group.initial.rebalance.delay.ms=0",
		"offsets.topic.replication.factor=1",
		`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`,
		"ssl.keystore.type=PKCS12",
		"ssl.keystore.location=" + sf.Keystore,
		"ssl.keystore.password=changeit",
		"ssl.truststore.type=PEM",
		"ssl.truststore.location=" + s.caFile,
		"listener.name.ssl.ssl.client.auth=required",
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
	}
	overrides = append(overrides, extra...)
	var args []string
	args = append(args, "--listeners", fmt.Sprintf("PLAINTEXT://%s,SASL_PLAINTEXT://%s,SASL_SSL://%s,SSL://%s", plain, s.saslPlain, s.saslSSL, s.ssl))
	for _, o := range overrides {
		args = append(args, "--override", o)
	}
	s.broker = &broker{proctest.Broker(t, brokerproc.Spec{Bin: bin, ID: 0, Port: port, Dir: filepath.Join(s.dir, "data"), Args: args}, 30*time.Second)}
	return s
}

// kcatArgs are kcat's -X settings for one combination.
func (s *secureBroker) kcatArgs(proto, mech, user, pass string) []string {
	args := []string{"-X", "security.protocol=" + proto}
	switch {
	case mech == "OAUTHBEARER":
		// librdkafka makes an unsecured JWT (KIP-255) for the principal.
		args = append(args, "-X", "sasl.mechanisms=OAUTHBEARER", "-X", "enable.sasl.oauthbearer.unsecure.jwt=true",
			"-X", "sasl.oauthbearer.config=principal="+user)
	case strings.HasPrefix(proto, "SASL_"):
		args = append(args, "-X", "sasl.mechanisms="+mech, "-X", "sasl.username="+user, "-X", "sasl.password="+pass)
	}
	if strings.HasSuffix(proto, "SSL") {
		args = append(args, "-X", "ssl.ca.location="+s.caFile)
	}
	if proto == "SSL" {
		args = append(args, "-X", "ssl.certificate.location="+s.clientCert, "-X", "ssl.key.location="+s.clientKey)
	}
	return args
}

// TestKcatSecurity: librdkafka (kcat) produces and consumes over SASL_PLAINTEXT
// and SASL_SSL with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 and over mutual TLS;
// wrong passwords and a missing client certificate are refused. The SCRAM users
// are made with `ktool user create` through the cluster.
func TestKcatSecurity(t *testing.T) {
	kcat := needKcat(t)
	s := startSecure(t)
	bin, err := ktool()
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t, 3*time.Minute)
	pw := filepath.Join(s.dir, "bob.pw")
	if err := os.WriteFile(pw, []byte("bob-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run(ctx, t, nil, bin, "--brokers", s.Addr(), "user", "create", "bob", "--password-file", pw)
	out := run(ctx, t, nil, bin, "--brokers", s.Addr(), "user", "list", "-o", "json")
	if !strings.Contains(string(out), `"SCRAM-SHA-256"`) || !strings.Contains(string(out), `"SCRAM-SHA-512"`) {
		t.Fatalf("ktool user list: %s", out)
	}
	createTopic(t, s.Addr(), "secure", 1, 1, nil)

	for i, tc := range []struct {
		proto, addr, mech, user, pass string
	}{
		{"SASL_PLAINTEXT", s.saslPlain, "PLAIN", "alice", "alice-secret"},
		{"SASL_PLAINTEXT", s.saslPlain, "SCRAM-SHA-256", "bob", "bob-secret"},
		{"SASL_PLAINTEXT", s.saslPlain, "SCRAM-SHA-512", "bob", "bob-secret"},
		{"SASL_SSL", s.saslSSL, "PLAIN", "alice", "alice-secret"},
		{"SASL_SSL", s.saslSSL, "SCRAM-SHA-256", "bob", "bob-secret"},
		{"SASL_SSL", s.saslSSL, "SCRAM-SHA-512", "bob", "bob-secret"},
		{"SSL", s.ssl, "", "", ""},
		{"SASL_SSL", s.saslSSL, "OAUTHBEARER", "dave", ""},
	} {
		name := tc.proto + "/" + tc.mech
		x := s.kcatArgs(tc.proto, tc.mech, tc.user, tc.pass)
		val := fmt.Sprintf("msg-%d", i)
		run(ctx, t, []byte(val+"\n"), kcat, append([]string{"-b", tc.addr, "-P", "-t", "secure"}, x...)...)
		got := run(ctx, t, nil, kcat, append([]string{"-b", tc.addr, "-C", "-t", "secure", "-o", strconv.Itoa(i), "-c", "1", "-e"}, x...)...)
		if strings.TrimSpace(string(got)) != val {
			t.Fatalf("%s: consumed %q, want %q", name, got, val)
		}
		if tc.user == "" || tc.mech == "OAUTHBEARER" {
			continue
		}
		bad := s.kcatArgs(tc.proto, tc.mech, tc.user, "wrong")
		_, stderr, err := runErr(ctx, nil, kcat, append([]string{"-b", tc.addr, "-L", "-m", "5"}, bad...)...)
		if err == nil || !strings.Contains(strings.ToLower(string(stderr)), "authentication") {
			t.Fatalf("%s with a wrong password: err %v, stderr %s", name, err, tail(string(stderr), 10))
		}
	}
	// Mutual TLS without a client certificate is refused.
	noCert := []string{"-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + s.caFile}
	if _, stderr, err := runErr(ctx, nil, kcat, append([]string{"-b", s.ssl, "-L", "-m", "5"}, noCert...)...); err == nil {
		t.Fatalf("SSL without a client certificate was accepted: %s", stderr)
	}
}

// TestKtoolClientConfig: ktool commands connect with a Kafka client.properties
// (SASL_SSL, SCRAM, PKCS12 truststore) and with the --tls-*/--sasl-* flags.
func TestKtoolClientConfig(t *testing.T) {
	s := startSecure(t)
	bin, err := ktool()
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t, 2*time.Minute)
	env := []string{"KTOOL_USER_PASSWORD=carol-secret"}
	runEnv(ctx, t, env, bin, "--brokers", s.Addr(), "user", "create", "carol", "--mechanism", "SCRAM-SHA-512")
	props := filepath.Join(s.dir, "client.properties")
	if err := os.WriteFile(props, []byte(strings.Join([]string{
		"security.protocol=SASL_SSL",
		"sasl.mechanism=SCRAM-SHA-512",
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="carol" password="carol-secret";`,
		"ssl.truststore.type=PKCS12",
		"ssl.truststore.location=" + s.truststoreP12,
		"ssl.truststore.password=changeit",
	}, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"--brokers", s.saslSSL, "--client-config", props}
	run(ctx, t, nil, bin, append(base, "topic", "create", "cc", "--partitions", "2", "--replication-factor", "1")...)
	if out := run(ctx, t, nil, bin, append(base, "topic", "list")...); !strings.Contains(string(out), "cc") {
		t.Fatalf("topic list over SASL_SSL: %s", out)
	}
	run(ctx, t, []byte("one\ntwo\n"), bin, append(base, "produce", "cc")...)
	if out := run(ctx, t, nil, bin, append(base, "consume", "cc", "--count", "2")...); !strings.Contains(string(out), "two") {
		t.Fatalf("consume over SASL_SSL: %s", out)
	}
	if out := run(ctx, t, nil, bin, append(base, "user", "list")...); !strings.Contains(string(out), "carol") {
		t.Fatalf("user list: %s", out)
	}
	// The same with flags, the password from a file.
	pw := filepath.Join(s.dir, "carol.pw")
	if err := os.WriteFile(pw, []byte("carol-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--brokers", s.saslSSL, "--tls-ca", s.caFile, "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", "carol", "--sasl-password-file", pw}
	if out := run(ctx, t, nil, bin, append(flags, "topic", "list")...); !strings.Contains(string(out), "cc") {
		t.Fatalf("topic list with flags: %s", out)
	}
	// mTLS with the client certificate.
	mtls := []string{"--brokers", s.ssl, "--tls-ca", s.caFile, "--tls-cert", s.clientCert, "--tls-key", s.clientKey}
	if out := run(ctx, t, nil, bin, append(mtls, "topic", "list")...); !strings.Contains(string(out), "cc") {
		t.Fatalf("topic list over mTLS: %s", out)
	}
	// A wrong password fails, saying why.
	if err := os.WriteFile(pw, []byte("nope\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := runErr(ctx, nil, bin, append(append(flags, "--timeout", "5s"), "topic", "list")...)
	if err == nil || !strings.Contains(string(stderr), "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("wrong password: %v\n%s", err, stderr)
	}
}

// runEnv is run with extra environment variables.
func runEnv(ctx context.Context, t testing.TB, env []string, name string, args ...string) []byte {
	t.Helper()
	stdout, stderr, err := runEnvErr(ctx, env, nil, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\nstderr:\n%s", filepath.Base(name), strings.Join(args, " "), err, tail(string(stderr), 40))
	}
	return stdout
}

// runEnvErr is runErr with extra environment variables.
func runEnvErr(ctx context.Context, env []string, stdin []byte, name string, args ...string) (stdout, stderr []byte, err error) {
	var so, se bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &so, &se
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	if ctx.Err() != nil {
		err = errors.Join(err, ctx.Err())
	}
	return so.Bytes(), se.Bytes(), err
}

// TestSCRAMBetweenBrokers: the brokers' own SCRAM user is written straight to
// ZooKeeper before any broker runs (`ktool user create --zookeeper`), then two
// brokers authenticate to each other with SCRAM-SHA-512 over SASL_SSL on the
// inter-broker listener: the controller's requests reach both (they become
// ready) and a follower replicates (the ISR holds both).
func TestSCRAMBetweenBrokers(t *testing.T) {
	bin, err := ktool()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ca, err := certgen.NewCA("scram-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	caFile, _, _, err := ca.WriteCA(dir, "changeit")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Sign(certgen.Options{CommonName: "broker", Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	sf, err := srv.WriteFiles(dir, "broker", ca, "changeit")
	if err != nil {
		t.Fatal(err)
	}
	zk := zktest.Start(t)
	chroot := zk.Addr() + "/scram"
	ctx := testCtx(t, 2*time.Minute)
	runEnv(ctx, t, []string{"KTOOL_USER_PASSWORD=broker-secret"}, bin, "user", "create", "broker", "--zookeeper", chroot, "--mechanism", "SCRAM-SHA-512")
	runEnv(ctx, t, []string{"KTOOL_USER_PASSWORD=app-secret"}, bin, "user", "create", "app", "--zookeeper", chroot)
	var clients []string
	for id := int32(0); id < 2; id++ {
		port, err := brokerproc.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		internal := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		client := freeAddr(t)
		clients = append(clients, client)
		args := []string{"--listeners", "INTERNAL://" + internal + ",CLIENT://" + client}
		for _, o := range []string{
			"listener.security.protocol.map=INTERNAL:SASL_SSL,CLIENT:SASL_SSL",
			"inter.broker.listener.name=INTERNAL",
			"sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
			"sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512",
			`listener.name.internal.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="broker-secret";`,
			"ssl.keystore.type=PKCS12", "ssl.keystore.location=" + sf.Keystore, "ssl.keystore.password=changeit",
			"ssl.truststore.type=PEM", "ssl.truststore.location=" + caFile,
			"offsets.topic.replication.factor=2", "zookeeper.session.timeout.ms=6000",
		} {
			args = append(args, "--override", o)
		}
		proctest.Broker(t, brokerproc.Spec{Bin: bin, ID: id, Port: port, Dir: filepath.Join(dir, fmt.Sprint(id)), ZooKeeper: chroot, Args: args}, 30*time.Second)
	}
	pw := filepath.Join(dir, "app.pw")
	if err := os.WriteFile(pw, []byte("app-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--brokers", strings.Join(clients, ","), "--tls-ca", caFile, "--sasl-mechanism", "SCRAM-SHA-256", "--sasl-user", "app", "--sasl-password-file", pw}
	run(ctx, t, nil, bin, append(flags, "topic", "create", "repl", "-p", "1", "-r", "2")...)
	run(ctx, t, []byte("a\nb\n"), bin, append(flags, "produce", "repl")...)
	eventually(t, 30*time.Second, func() error {
		out, stderr, err := runErr(ctx, nil, bin, append(flags, "topic", "describe", "repl", "-o", "json")...)
		if err != nil {
			return fmt.Errorf("%v: %s", err, stderr)
		}
		if !strings.Contains(strings.Join(strings.Fields(string(out)), ""), `"isr":[0,1]`) && !strings.Contains(strings.Join(strings.Fields(string(out)), ""), `"isr":[1,0]`) {
			return fmt.Errorf("ISR not both brokers yet: %s", out)
		}
		return nil
	})
}

// TestUserCreatePasswdDelete: `ktool user create`, `passwd` and `delete`, run
// over SASL_SSL as a PLAIN admin, against a SCRAM broker: the new user logs in
// with SCRAM-SHA-256 and -512; after passwd the old password is refused and
// the new one accepted; after deleting one mechanism only the other logs in,
// and after deleting the user neither does, and the user is no longer listed.
// A Kafka broker applies a change when it sees the /config/changes
// notification, so every check polls to a deadline.
func TestUserCreatePasswdDelete(t *testing.T) {
	s := startSecure(t)
	bin, err := ktool()
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t, 2*time.Minute)
	secret := func(name, pass string) string {
		p := filepath.Join(s.dir, name)
		if err := os.WriteFile(p, []byte(pass+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	admin := []string{"--brokers", s.saslSSL, "--tls-ca", s.caFile, "--sasl-mechanism", "PLAIN", "--sasl-user", "alice", "--sasl-password-file", secret("alice.pw", "alice-secret")}
	oldPw, newPw := secret("erin-old.pw", "erin-old"), secret("erin-new.pw", "erin-new")
	// login runs a command as erin: nil if it succeeded, an error saying so
	// if the broker refused her, any other failure ends the test.
	login := func(mech, pwFile string) error {
		args := []string{"--brokers", s.saslSSL, "--tls-ca", s.caFile, "--sasl-mechanism", mech, "--sasl-user", "erin", "--sasl-password-file", pwFile, "--timeout", "5s", "topic", "list"}
		_, stderr, err := runErr(ctx, nil, bin, args...)
		switch {
		case err == nil:
			return nil
		case strings.Contains(string(stderr), "SASL_AUTHENTICATION_FAILED"):
			return errRefused
		}
		t.Fatalf("erin %s with %s: %v\n%s", mech, filepath.Base(pwFile), err, tail(string(stderr), 10))
		return nil
	}
	// expect polls until each mechanism's login with pwFile succeeds (ok) or
	// is refused (!ok).
	expect := func(what, pwFile string, ok bool, mechs ...string) {
		t.Helper()
		for _, m := range mechs {
			eventually(t, 20*time.Second, func() error {
				switch err := login(m, pwFile); {
				case ok && err != nil:
					return fmt.Errorf("%s: erin %s with %s: %v", what, m, filepath.Base(pwFile), err)
				case !ok && err == nil:
					return fmt.Errorf("%s: erin %s with %s logged in", what, m, filepath.Base(pwFile))
				}
				return nil
			})
		}
	}
	both := []string{"SCRAM-SHA-256", "SCRAM-SHA-512"}

	expect("before create", oldPw, false, both...)
	run(ctx, t, nil, bin, append(admin, "user", "create", "erin", "--password-file", oldPw)...)
	if _, _, err := runErr(ctx, nil, bin, append(admin, "user", "create", "erin", "--password-file", newPw)...); err == nil {
		t.Fatal("user create of an existing user succeeded")
	}
	expect("after create", oldPw, true, both...)
	expect("after create", newPw, false, both...)

	runEnv(ctx, t, []string{"KTOOL_USER_PASSWORD=erin-new"}, bin, append(admin, "user", "passwd", "erin")...)
	expect("after passwd", oldPw, false, both...)
	expect("after passwd", newPw, true, both...)

	run(ctx, t, nil, bin, append(admin, "user", "delete", "erin", "--mechanism", "SCRAM-SHA-256")...)
	expect("after deleting SCRAM-SHA-256", newPw, false, "SCRAM-SHA-256")
	expect("after deleting SCRAM-SHA-256", newPw, true, "SCRAM-SHA-512")
	if out := run(ctx, t, nil, bin, append(admin, "user", "list", "erin", "-o", "json")...); strings.Contains(string(out), "SCRAM-SHA-256") || !strings.Contains(string(out), "SCRAM-SHA-512") {
		t.Fatalf("user list after deleting SCRAM-SHA-256: %s", out)
	}

	run(ctx, t, nil, bin, append(admin, "user", "delete", "erin")...)
	expect("after delete", newPw, false, both...)
	if out := run(ctx, t, nil, bin, append(admin, "user", "list", "-o", "json")...); strings.Contains(string(out), "erin") {
		t.Fatalf("user list after delete: %s", out)
	}
	if _, stderr, err := runEnvErr(ctx, []string{"KTOOL_USER_PASSWORD=erin-new"}, nil, bin, append(admin, "user", "passwd", "erin")...); err == nil || !strings.Contains(string(stderr), "no SCRAM credential") {
		t.Fatalf("user passwd of a deleted user: %v\n%s", err, stderr)
	}
}

// errRefused is a login the broker refused (SASL_AUTHENTICATION_FAILED).
var errRefused = errors.New("SASL_AUTHENTICATION_FAILED")
