// Package testbin builds the ktool binary once for tests that run it as a
// process (brokers killed with SIGKILL, terminals, local clusters).
package testbin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Build compiles ./cmd/ktool of the module holding the working directory into a
// new temporary directory, without -race so the broker runs at its real speed.
// $KTOOL_TEST_BIN, when set, names a prebuilt binary to use instead. cleanup
// removes what Build created.
func Build() (path string, cleanup func(), err error) {
	if bin := os.Getenv("KTOOL_TEST_BIN"); bin != "" {
		return bin, func() {}, nil
	}
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", func() {}, fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(gomod))
	if mod == "" || mod == os.DevNull {
		return "", func() {}, errors.New("not inside the ktool module")
	}
	dir, err := os.MkdirTemp("", "ktool-bin-")
	if err != nil {
		return "", func() {}, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	path = filepath.Join(dir, "ktool")
	cmd := exec.Command("go", "build", "-o", path, "./cmd/ktool")
	cmd.Dir = filepath.Dir(mod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", cleanup, fmt.Errorf("go build ./cmd/ktool: %w\n%s", err, out)
	}
	return path, cleanup, nil
}
