package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ktoolhq/ktool/tools/setup"
)

// TestSecureUp: `cluster up --secure` on the embedded store comes up with
// SASL_SSL and SCRAM for clients and TLS between brokers; the saved profile,
// client.properties and kcat.conf reach it, a client without credentials does
// not, and kill/start/status work through the admin user.
func TestSecureUp(t *testing.T) {
	e := newEnv(t)
	base, _ := freeBase(t, 6)
	e.mustRun("cluster", "up", "--secure", "--embedded", "-n", "3", "--base-port", strconv.Itoa(base), "--dir", e.dir)
	for _, f := range []string{"client.properties", "kcat.conf", "admin.password", "broker-0/server.properties"} {
		st, err := os.Stat(filepath.Join(e.dir, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v (it holds a password: want mode 0600)", f, st, err)
		}
	}
	props, err := os.ReadFile(filepath.Join(e.dir, "broker-0", "server.properties"))
	if err != nil || !strings.Contains(string(props), "CLIENT:SASL_SSL,INTERNAL:SSL") {
		t.Fatalf("server.properties: %s %v", props, err)
	}
	// The saved profile (SCRAM-SHA-512 as admin over TLS) is current.
	e.mustRun("topic", "create", "sec", "-p", "3", "-r", "3")
	if out := e.mustRun("topic", "describe", "sec"); !strings.Contains(out, "Replication factor: 3") {
		t.Fatalf("describe: %s", out)
	}
	addr := "127.0.0.1:" + strconv.Itoa(base)
	noProfile := filepath.Join(t.TempDir(), "none.yaml") // no profile: only what the command line says
	if out := e.mustRun("--config-file", noProfile, "--brokers", addr, "--client-config", filepath.Join(e.dir, "client.properties"), "topic", "list"); !strings.Contains(out, "sec") {
		t.Fatalf("topic list with client.properties: %s", out)
	}
	if _, _, err := e.run("--config-file", noProfile, "--brokers", addr, "--tls-ca", setup.CAFile(e.dir), "--timeout", "3s", "topic", "list"); err == nil {
		t.Fatal("a client without SASL credentials listed topics")
	}
	if kcat, err := exec.LookPath("kcat"); err == nil {
		out, err := exec.Command(kcat, "-F", setup.KcatConfig(e.dir), "-L", "-t", "sec", "-m", "10").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "3 partitions") {
			t.Fatalf("kcat -F kcat.conf: %v\n%s", err, out)
		}
	}
	e.mustRun("cluster", "kill", "1", "--dir", e.dir)
	e.mustRun("cluster", "start", "1", "--dir", e.dir)
	if out := e.mustRun("cluster", "status", "--dir", e.dir); strings.Count(out, "yes") < 3 {
		t.Fatalf("status after kill/start: %s", out)
	}
}
