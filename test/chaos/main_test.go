package chaos

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ktoolBin is the binary built once by TestMain; buildErr says why there is
// none.
var (
	ktoolBin string
	buildErr error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ktool-chaos-")
	if err != nil {
		buildErr = err
	} else {
		defer os.RemoveAll(dir)
		ktoolBin = filepath.Join(dir, "ktool")
		buildErr = build(ktoolBin)
	}
	m.Run()
}

// build compiles ./cmd/ktool of the module holding the working directory.
func build(out string) error {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(gomod))
	if mod == "" || mod == os.DevNull {
		return errors.New("not inside the ktool module")
	}
	cmd := exec.Command("go", "build", "-o", out, "./cmd/ktool")
	cmd.Dir = filepath.Dir(mod)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/ktool: %w\n%s", err, b)
	}
	return nil
}

// ktoolBinary is the ktool binary, or the test fails with the build error.
func ktoolBinary(t testing.TB) string {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("building ktool: %v", buildErr)
	}
	return ktoolBin
}
