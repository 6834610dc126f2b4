package testbin

import (
	"os/exec"
	"strings"
	"testing"
)

func TestBuildRunsKtool(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	path, cleanup, err := Build()
	defer cleanup()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "ktool ") {
		t.Fatalf("ktool version: %v %q", err, out)
	}
}

func TestPrebuiltBinaryFromEnv(t *testing.T) {
	t.Setenv("KTOOL_TEST_BIN", "/opt/ktool")
	path, cleanup, err := Build()
	defer cleanup()
	if err != nil || path != "/opt/ktool" {
		t.Fatalf("got %q %v", path, err)
	}
}
