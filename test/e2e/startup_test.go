package e2e

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// runKtool runs the binary to completion (bounded) and returns its exit code and
// stderr.
func runKtool(t testing.TB, args ...string) (int, string) {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ktoolBin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("ktool %v still running after 30s", args)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), stderr.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, stderr.String()
}

// TestBrokerStartRefusesBadInput: bad settings end the process with the usage exit
// code and a message naming the problem; a second broker on a data dir in use is
// refused while the first keeps serving.
func TestBrokerStartRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	listener := "PLAINTEXT://127.0.0.1:" + strconv.Itoa(port)
	for _, c := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"listener without a port", []string{"--listeners", "PLAINTEXT://127.0.0.1"}, 2, "PLAINTEXT://127.0.0.1"},
		{"unknown listener scheme", []string{"--listeners", "GOPHER://127.0.0.1:" + strconv.Itoa(port)}, 2, "GOPHER"},
		{"override without =", []string{"--listeners", listener, "--override", "num.partitions"}, 2, "num.partitions"},
		{"override with a bad value", []string{"--listeners", listener, "--override", "num.partitions=many"}, 2, "num.partitions"},
		{"override below its minimum", []string{"--listeners", listener, "--override", "num.partitions=0"}, 2, "num.partitions"},
		{"missing config file", []string{"--listeners", listener, "--config", dir + "/nope.properties"}, 2, "nope.properties"},
		{"negative broker id", []string{"--listeners", listener, "--broker-id", "-7"}, 2, "broker.id"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"broker", "start", "--log-dirs", t.TempDir()}, c.args...)
			code, stderr := runKtool(t, args...)
			if code != c.code || !strings.Contains(stderr, c.says) {
				t.Errorf("exit %d, stderr %q; want exit %d naming %q", code, tail(stderr, 5), c.code, c.says)
			}
		})
	}

	b := startBroker(t)
	const topic = "locked"
	createTopic(t, b.Admin(t), topic, 1, nil)
	code, stderr := runKtool(t, "broker", "start", "--log-dirs", b.Dir(), "--broker-id", "0",
		"--listeners", "PLAINTEXT://127.0.0.1:"+strconv.Itoa(freePort(t)))
	if code == 0 || !strings.Contains(strings.ToLower(stderr), "lock") {
		t.Errorf("second broker on a data dir in use: exit %d, stderr %q; want a failure about the lock", code, tail(stderr, 5))
	}
	brokerStillWorks(t, b, topic, "a second broker tried the same data dir")
}
