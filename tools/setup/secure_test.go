package setup

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSecureSpecFiles(t *testing.T) {
	dir := t.TempDir()
	s := DefaultSpec()
	s.Secure, s.BasePort = true, 19092
	if got := len(s.Ports()); got != 6 { // 3 client + 3 inter-broker
		t.Fatalf("ports %v", s.Ports())
	}
	if _, err := s.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	props, err := os.ReadFile(ConfigPath(dir, 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"listeners=CLIENT://127.0.0.1:19093,INTERNAL://127.0.0.1:19096", "inter.broker.listener.name=INTERNAL",
		"listener.name.internal.ssl.client.auth=required", "broker-1.p12"} {
		if !strings.Contains(string(props), want) {
			t.Errorf("server.properties lacks %q:\n%s", want, props)
		}
	}
	ca, err := os.ReadFile(CAFile(dir))
	if err != nil {
		t.Fatal(err)
	}
	// Writing again keeps the CA and the passwords.
	if _, err := s.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(CAFile(dir))
	if !bytes.Equal(ca, again) {
		t.Fatal("a second WriteFiles made a new CA")
	}
	for _, f := range []string{ConfigPath(dir, 0), filepath.Join(dir, "client.properties"), KcatConfig(dir), AdminPasswordFile(dir)} {
		if st, err := os.Stat(f); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v %v, want 0600", f, st.Mode(), err)
		}
	}
	s.BasePort = 65533
	if err := s.Validate(); err == nil {
		t.Fatal("a secure cluster without room for its inter-broker ports validated")
	}
}
