package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/internal/brokerproc"
	"github.com/ktoolhq/ktool/internal/brokerproc/proctest"
	"github.com/ktoolhq/ktool/internal/testbin"
)

// ktoolBin is the binary under test: $KTOOL_E2E_BIN when set (a prebuilt binary,
// e.g. from CI's build step), else built once by TestMain. buildErr fails every test
// that needs it, so a broken build shows up as failures instead of a silent exit.
var (
	ktoolBin string
	buildErr error
)

func TestMain(m *testing.M) {
	if bin := os.Getenv("KTOOL_E2E_BIN"); bin != "" {
		os.Setenv("KTOOL_TEST_BIN", bin)
	}
	var cleanup func()
	ktoolBin, cleanup, buildErr = testbin.Build()
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// short reports whether the reduced data volumes apply (-short or CI=true), unless
// KTOOL_E2E_FULL=1 asks for the full ones.
func short() bool {
	if os.Getenv("KTOOL_E2E_FULL") == "1" {
		return false
	}
	return testing.Short() || os.Getenv("CI") == "true"
}

// broker is one `ktool broker start` child process (internal/brokerproc) with
// its own data dir and port.
type broker struct {
	*brokerproc.Broker
}

// startBroker starts a standalone broker on a free 127.0.0.1 port with a fresh data
// dir; extra are more flags (e.g. "--override", "num.partitions=3"). The broker is
// stopped (SIGTERM, then SIGKILL) when the test ends, and its log is printed if the
// test failed.
func startBroker(t *testing.T, extra ...string) *broker {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	b := &broker{}
	// Runs after the broker stopped (cleanups run last first).
	t.Cleanup(func() {
		if b.Broker == nil {
			return
		}
		// A recovered handler panic or an error the broker logged is a bug even
		// when every client call succeeded.
		if bad := alarming(b.Logs()); bad != "" {
			t.Errorf("broker logged errors:\n%s", bad)
		}
	})
	b.Broker = proctest.Broker(t, brokerproc.Spec{Bin: ktoolBin, ID: 0, Dir: t.TempDir(), Args: extra}, 20*time.Second)
	return b
}

// freePort is a port on 127.0.0.1 nothing listens on.
func freePort(t testing.TB) int {
	t.Helper()
	port, err := brokerproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// Alive fails the test if the broker process has exited.
func (b *broker) Alive(t testing.TB) {
	t.Helper()
	if !b.Running() {
		t.Fatalf("broker process exited: %v\n%s", b.ExitErr(), b.Tail(40))
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (b *broker) Kill(t testing.TB) {
	t.Helper()
	if err := b.Broker.Kill(); err != nil {
		t.Fatal(err)
	}
}

// Stop sends SIGTERM and fails the test unless the broker exits cleanly in time.
func (b *broker) Stop(t testing.TB) {
	t.Helper()
	if err := b.Broker.Stop(30 * time.Second); err != nil {
		t.Fatalf("clean shutdown: %v\n%s", err, b.Tail(40))
	}
}

// Restart starts the broker again on the same data dir and port.
func (b *broker) Restart(t testing.TB) {
	t.Helper()
	if err := b.Broker.Restart(); err != nil {
		t.Fatalf("restarting broker: %v", err)
	}
}

// Client is a kgo client for the broker, closed when the test ends.
func (b *broker) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(b.Addr())}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Admin is a kadm client for the broker.
func (b *broker) Admin(t testing.TB) *kadm.Client {
	t.Helper()
	return kadm.NewClient(b.Client(t))
}

// testCtx bounds a test's client calls, so a hung broker fails the test rather than
// the whole run.
func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls f until it returns nil or the deadline passes.
func eventually(t testing.TB, total time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(total)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing after %v: %v", total, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// alarming returns the log lines at level ERROR and any panic output.
func alarming(logs string) string {
	var out []string
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "level=ERROR") || strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "fatal error:") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func tail(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}
