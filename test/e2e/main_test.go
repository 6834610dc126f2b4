package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

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

// broker is one `ktool broker start` child process with its own data dir and port.
type broker struct {
	dir   string
	port  int
	extra []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	logs *syncBuffer
	done chan struct{}
	err  error // the process's exit status once done is closed
}

// syncBuffer collects the broker's stderr from the copying goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
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
	b := &broker{dir: t.TempDir(), extra: extra}
	t.Cleanup(func() {
		b.stop(20 * time.Second)
		// A recovered handler panic or an error the broker logged is a bug even
		// when every client call succeeded.
		if bad := alarming(b.Logs()); bad != "" {
			t.Errorf("broker logged errors:\n%s", bad)
		}
		if t.Failed() {
			t.Logf("broker log (last lines):\n%s", tail(b.Logs(), 80))
		}
	})
	// A port picked free can be taken before the child binds it; try a few.
	for attempt := 0; ; attempt++ {
		b.port = freePort(t)
		err := b.launch()
		if err == nil {
			return b
		}
		if attempt == 4 || !strings.Contains(b.Logs(), "address already in use") {
			t.Fatalf("starting broker: %v\n%s", err, tail(b.Logs(), 40))
		}
	}
}

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Addr is the broker's host:port.
func (b *broker) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port)) }

// Dir is the broker's log dir.
func (b *broker) Dir() string { return b.dir }

// Logs is everything the broker wrote to stderr, across restarts.
func (b *broker) Logs() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.logs == nil {
		return ""
	}
	return b.logs.String()
}

// launch runs the binary and waits for its ready line.
func (b *broker) launch() error {
	args := []string{"broker", "start",
		"--log-dirs", b.dir,
		"--listeners", "PLAINTEXT://" + b.Addr(),
		"--broker-id", "0",
	}
	args = append(args, b.extra...)
	cmd := exec.Command(ktoolBin, args...)
	b.mu.Lock()
	if b.logs == nil {
		b.logs = &syncBuffer{}
	}
	cmd.Stderr = b.logs
	b.mu.Unlock()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	b.mu.Lock()
	b.cmd, b.done = cmd, done
	b.mu.Unlock()
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if line := sc.Text(); strings.Contains(line, " ready: listening on ") {
				select {
				case ready <- line:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		err := cmd.Wait()
		b.mu.Lock()
		b.err = err
		b.mu.Unlock()
		close(done)
	}()
	select {
	case line := <-ready:
		if !strings.Contains(line, b.Addr()) {
			return fmt.Errorf("ready line %q does not name %s", line, b.Addr())
		}
		return nil
	case <-done:
		return fmt.Errorf("broker exited before it was ready: %v", b.exitErr())
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return errors.New("broker not ready within 60s")
	}
}

func (b *broker) exitErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// Alive fails the test if the broker process has exited.
func (b *broker) Alive(t testing.TB) {
	t.Helper()
	b.mu.Lock()
	done := b.done
	b.mu.Unlock()
	select {
	case <-done:
		t.Fatalf("broker process exited: %v\n%s", b.exitErr(), tail(b.Logs(), 40))
	default:
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (b *broker) Kill(t testing.TB) {
	t.Helper()
	b.mu.Lock()
	cmd, done := b.cmd, b.done
	b.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// Stop sends SIGTERM and fails the test unless the broker exits cleanly in time.
func (b *broker) Stop(t testing.TB) {
	t.Helper()
	if err := b.stop(30 * time.Second); err != nil {
		t.Fatalf("clean shutdown: %v\n%s", err, tail(b.Logs(), 40))
	}
}

func (b *broker) stop(wait time.Duration) error {
	b.mu.Lock()
	cmd, done := b.cmd, b.done
	b.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-done:
		return b.exitErr()
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
		return b.exitErr()
	case <-time.After(wait):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("no exit within %v of SIGTERM; killed", wait)
	}
}

// Restart starts the broker again on the same data dir and port.
func (b *broker) Restart(t testing.TB) {
	t.Helper()
	if err := b.launch(); err != nil {
		t.Fatalf("restarting broker: %v\n%s", err, tail(b.Logs(), 40))
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
