package cert

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"software.sslmate.com/src/go-pkcs12"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

func TestCertCommands(t *testing.T) {
	dir := t.TempDir()
	ios, _, _, _ := cmdutil.Test()
	f := cmdutil.NewFactory(ios, cmdutil.BuildInfo{})
	run := func(args ...string) error {
		cmd := NewCommand(f)
		cmd.SetArgs(append(args, "--dir", dir))
		return cmd.Execute()
	}
	if err := run("ca"); err != nil {
		t.Fatal(err)
	}
	if err := run("ca"); err == nil {
		t.Fatal("a second CA overwrote the first")
	}
	if err := run("broker", "kafka-1", "--host", "kafka-1.example.com", "--host", "10.0.0.1"); err != nil {
		t.Fatal(err)
	}
	if err := run("client", "alice"); err != nil {
		t.Fatal(err)
	}
	if err := run("broker", "../evil"); err == nil {
		t.Fatal("a path as name accepted")
	}
	read := func(name string) *x509.Certificate {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := pem.Decode(data)
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	roots := x509.NewCertPool()
	roots.AddCert(read("ca.crt"))
	b := read("kafka-1.crt")
	if _, err := b.Verify(x509.VerifyOptions{Roots: roots, DNSName: "kafka-1.example.com"}); err != nil {
		t.Fatal(err)
	}
	if err := b.VerifyHostname("10.0.0.1"); err != nil {
		t.Fatal(err)
	}
	if _, err := read("alice.crt").Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatal(err)
	}
	pass, err := cmdutil.ReadSecretFile(filepath.Join(dir, "store.password"))
	if err != nil {
		t.Fatal(err)
	}
	p12, err := os.ReadFile(filepath.Join(dir, "kafka-1.p12"))
	if err != nil {
		t.Fatal(err)
	}
	if _, leaf, _, err := pkcs12.DecodeChain(p12, pass); err != nil || leaf.Subject.CommonName != "kafka-1" {
		t.Fatalf("keystore: %v", err)
	}
	if st, err := os.Stat(filepath.Join(dir, "ca.key")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("ca.key mode: %v %v", st.Mode(), err)
	}
}
