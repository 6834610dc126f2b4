package brokerproc

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/internal/testbin"
)

// bin is the ktool binary, built once for the tests that run it.
var (
	bin      string
	buildErr error
)

func TestMain(m *testing.M) {
	var cleanup func()
	bin, cleanup, buildErr = testbin.Build()
	code := m.Run()
	cleanup()
	os.Exit(code)
}

func ktool(t *testing.T) string {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return bin
}

func TestReadyLine(t *testing.T) {
	for _, r := range []Ready{
		{ID: 3, Addr: "127.0.0.1:9092", Advertised: "localhost:9092", ClusterID: "Ab-_9", Mode: "standalone (embedded coordination store)"},
		{ID: 0, Addr: "[::1]:1", Advertised: "h:1", ClusterID: "x", Mode: "ZooKeeper a:2181,b:2181/kafka"},
	} {
		line := ReadyLine(r)
		got, ok := ParseReady(line)
		if !ok || got != r {
			t.Errorf("ParseReady(%q) = %+v, %v; want %+v", line, got, ok, r)
		}
	}
	for _, bad := range []string{
		"", "ktool broker shutting down", "ktool broker x ready: listening on a, advertised as b, cluster c, d",
		"ktool broker 1 ready: listening on a", "ktool broker 1 ready: listening on a, advertised as b",
		"ktool broker 1 ready: listening on a, advertised as b, cluster c",
		"ktool broker 99999999999 ready: listening on a, advertised as b, cluster c, d",
	} {
		if r, ok := ParseReady(bad); ok {
			t.Errorf("ParseReady(%q) = %+v, want no match", bad, r)
		}
	}
}

// TestBrokerProcess runs a real standalone broker through every signal.
func TestBrokerProcess(t *testing.T) {
	bin := ktool(t)
	dir := t.TempDir()
	b, err := Start(Spec{Bin: bin, ID: 0, Dir: filepath.Join(dir, "data"), Overrides: []string{"num.partitions=2"}})
	if b != nil {
		t.Cleanup(func() {
			_ = b.Stop(10 * time.Second)
			if t.Failed() {
				t.Logf("broker output:\n%s", b.Tail(60))
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	first := b.Ready()
	if first.Addr != b.Addr() || first.ClusterID == "" || !strings.HasPrefix(first.Mode, "standalone") || !b.Running() || b.PID() == 0 {
		t.Fatalf("after Start: ready %+v, running %v, pid %d", first, b.Running(), b.PID())
	}
	reachable := func(wait time.Duration) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RequestRetries(0))
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_, err = kadm.NewClient(cl).BrokerMetadata(ctx)
		return err
	}
	if err := reachable(10 * time.Second); err != nil {
		t.Fatalf("a ready broker does not answer: %v", err)
	}

	if err := b.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := reachable(time.Second); err == nil {
		t.Fatal("a paused broker answered")
	}
	if err := b.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := reachable(10 * time.Second); err != nil {
		t.Fatalf("a resumed broker does not answer: %v", err)
	}

	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	if b.Running() || b.ExitErr() == nil || b.PID() != 0 {
		t.Fatalf("after Kill: running %v, exit %v, pid %d", b.Running(), b.ExitErr(), b.PID())
	}
	if err := b.Kill(); err == nil {
		t.Fatal("killing a broker that is not running must fail")
	}
	// Same port, same data dir: the cluster id kept in it comes back.
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	if again := b.Ready(); again.Addr != first.Addr || again.ClusterID != first.ClusterID {
		t.Fatalf("restarted: %+v, first run %+v", again, first)
	}
	if err := b.Launch(); err == nil {
		t.Fatal("launching a running broker must fail")
	}
	if err := b.Terminate(30 * time.Second); err != nil {
		t.Fatalf("SIGTERM: not a clean exit: %v", err)
	}
	logs := b.Logs()
	for _, want := range []string{"=== brokerproc: starting broker 0", "=== brokerproc: SIGSTOP broker 0", "=== brokerproc: SIGCONT broker 0",
		"=== brokerproc: SIGKILL broker 0", "=== brokerproc: SIGTERM broker 0", "stdout: ktool broker 0 ready: listening on " + b.Addr(),
		"stdout: ktool broker 0 shutting down"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the output lacks %q", want)
		}
	}
	if strings.Count(logs, "=== brokerproc: starting broker 0") != 2 {
		t.Errorf("the output is not kept across restarts")
	}

	// The output can go to a file instead, appended across restarts.
	logFile := filepath.Join(dir, "broker.log")
	f, err := Start(Spec{Bin: bin, ID: 7, Dir: filepath.Join(dir, "data7"), LogFile: logFile})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(logFile)
	if err != nil || !strings.Contains(string(data), "stdout: ktool broker 7 ready") || f.Logs() != string(data) {
		t.Fatalf("log file: %v\n%s", err, data)
	}
}

func TestStartFailsWithTheOutput(t *testing.T) {
	_, err := Start(Spec{Bin: bin, ID: 0, Dir: t.TempDir(), Overrides: []string{"num.partitions=zero"}, ReadyTimeout: 30 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "num.partitions") {
		t.Fatalf("a broker that cannot start: %v", err)
	}
}
