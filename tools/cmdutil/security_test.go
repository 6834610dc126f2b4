package cmdutil_test

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/ktoolhq/ktool/internal/certgen"
	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
)

// TestSecurityAgainstKfake: the Factory's clients reach franz-go's kfake over
// TLS with SASL (SCRAM-SHA-256 and PLAIN), from flags, from a client.properties
// and from a profile; a wrong password and a missing password fail clearly.
func TestSecurityAgainstKfake(t *testing.T) {
	dir := t.TempDir()
	ca, err := certgen.NewCA("kfake-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	caFile, _, trust, err := ca.WriteCA(dir, "changeit")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Sign(certgen.Options{CommonName: "kfake", Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	c := cmdtest.Cluster(t, kfake.NumBrokers(1), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-256", "admin", "admin-secret"),
		kfake.Superuser("PLAIN", "plainadmin", "plain-secret"),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{srv.Cert.Raw}, PrivateKey: srv.Key}}}))
	addrs := c.ListenAddrs()
	ping := func(f *cmdutil.Factory) error {
		cl, err := f.Client()
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return cl.Ping(ctx)
	}
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	e := cmdtest.NewEnv(t, addrs)
	e.F.SecurityFlags = cmdutil.Security{TLSCA: caFile, SASLMechanism: "SCRAM-SHA-256", SASLUser: "admin",
		SASLPasswordFile: write("pw", "admin-secret\n")}
	if err := ping(e.F); err != nil {
		t.Fatalf("flags: %v", err)
	}
	e.F.SecurityFlags.SASLPasswordFile = write("bad", "nope\n")
	if err := ping(e.F); err == nil { // kfake hangs up rather than answering SASL_AUTHENTICATION_FAILED
		t.Fatal("wrong password accepted")
	}
	e.F.SecurityFlags.SASLPasswordFile = ""
	t.Setenv(cmdutil.PasswordEnv, "")
	os.Unsetenv(cmdutil.PasswordEnv)
	if err := ping(e.F); err == nil || !strings.Contains(err.Error(), "no SASL password") {
		t.Fatalf("no password and no terminal: %v", err)
	}

	props := write("client.properties", strings.Join([]string{
		"security.protocol=SASL_SSL",
		"sasl.mechanism=PLAIN",
		`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="plainadmin" password="plain-secret";`,
		"ssl.truststore.type=PKCS12",
		"ssl.truststore.location=" + trust,
		"ssl.truststore.password=changeit",
	}, "\n"))
	e2 := cmdtest.NewEnv(t, addrs)
	e2.F.SecurityFlags.ClientConfig = props
	if err := ping(e2.F); err != nil {
		t.Fatalf("client.properties: %v", err)
	}

	// A profile's security block, with the password from the environment.
	cfg, err := e2.F.Config()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Profiles["secure"] = &cmdutil.Profile{Brokers: addrs, Security: &cmdutil.Security{
		TLS: true, TLSCA: caFile, SASLMechanism: "SCRAM-SHA-256", SASLUser: "admin"}}
	cfg.Current = "secure"
	if err := cfg.Save(); err != nil {
		t.Fatal(err)
	}
	e3 := cmdtest.NewEnv(t, nil)
	e3.F.ConfigPath = e2.F.ConfigPath
	t.Setenv(cmdutil.PasswordEnv, "admin-secret")
	if err := ping(e3.F); err != nil {
		t.Fatalf("profile: %v", err)
	}
	// Without TLS the TLS listener does not answer Kafka.
	e4 := cmdtest.NewEnv(t, addrs)
	e4.F.ClientTimeout = 2 * time.Second
	e4.F.SecurityFlags = cmdutil.Security{SASLMechanism: "SCRAM-SHA-256", SASLUser: "admin"}
	if err := ping(e4.F); err == nil {
		t.Fatal("plaintext to a TLS listener succeeded")
	}
}
