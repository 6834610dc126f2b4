package setup

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// ktoolBin is the binary the terminal test drives, built by TestMain.
var (
	ktoolBin string
	buildErr error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ktool-setup-test-")
	if err != nil {
		buildErr = err
	} else {
		ktoolBin = filepath.Join(dir, "ktool")
		out, err := exec.Command("go", "build", "-o", ktoolBin, "github.com/ktoolhq/ktool/cmd/ktool").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("building ktool: %v\n%s", err, out)
		}
	}
	code := m.Run()
	if dir != "" {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// screen collects what the program writes to its terminal and plays the
// terminal's part in the dialogue: survey asks for the cursor position
// (ESC[6n) and waits for the answer (ESC[row;colR).
type screen struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	seen     int // how far expect has matched
	answered int   // how far cursor position requests are answered
	requests []int // where each answered request ends
	term     io.Writer
}

const (
	cursorRequest = "\x1b[6n"
	// survey measures the terminal by moving the cursor far down and right.
	toCorner = "\x1b[999;999f"
)

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, _ := s.buf.Write(p)
	all := s.buf.Bytes()
	for {
		i := bytes.Index(all[s.answered:], []byte(cursorRequest))
		if i < 0 {
			// A request may be split across writes: look again at its start.
			s.answered = max(s.answered, len(all)-len(cursorRequest)+1)
			break
		}
		at := s.answered + i
		answer := "\x1b[20;5R"
		if bytes.HasSuffix(all[:at], []byte(toCorner)) {
			answer = "\x1b[40;120R"
		}
		if _, err := io.WriteString(s.term, answer); err != nil {
			return n, err
		}
		s.answered = at + len(cursorRequest)
		s.requests = append(s.requests, s.answered)
	}
	return n, nil
}

// prompt waits for a question that reads a line: its text, then the two
// cursor position requests survey makes before it reads (terminal size and
// cursor position) answered, so that typed keys never arrive in between.
func (s *screen) prompt(t *testing.T, text string) {
	t.Helper()
	s.expect(t, text)
	deadline := time.Now().Add(20 * time.Second)
	for {
		s.mu.Lock()
		n := 0
		for _, end := range s.requests {
			if end > s.seen {
				n++
			}
		}
		s.mu.Unlock()
		if n >= 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q: survey never asked for the cursor position", text)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// expect waits until text appears after what was matched before.
func (s *screen) expect(t *testing.T, text string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s.mu.Lock()
		rest := s.buf.String()[s.seen:]
		if i := strings.Index(rest, text); i >= 0 {
			s.seen += i + len(text)
			s.mu.Unlock()
			return
		}
		all := s.buf.String()
		s.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("%q never appeared; screen:\n%s", text, all)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestInitInteractive(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	home := t.TempDir()
	dir := filepath.Join(home, "kc")
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := busy.Addr().(*net.TCPAddr).Port
	base := freePort(t)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ktoolBin, "cluster", "init", "--dir", dir, "--zookeeper-mode", "embedded")
	cmd.Env = append(os.Environ(), "CI=", "TERM=xterm", "NO_COLOR=1", "KTOOL_CONFIG="+filepath.Join(home, "config.yaml"))
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	scr := &screen{term: tty}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = bytesCopy(scr, tty)
	}()
	send := func(s string) {
		t.Helper()
		if _, err := tty.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	const enter = "\r"

	scr.prompt(t, "Number of brokers")
	send("2" + enter)
	scr.prompt(t, "Host the brokers listen on")
	send(enter)
	scr.prompt(t, "Port of broker 0")
	send(strconv.Itoa(busyPort) + enter)
	scr.expect(t, "ports in use")
	scr.prompt(t, "Port of broker 0")
	send(strconv.Itoa(base) + enter)
	scr.prompt(t, "Metrics port of broker 0")
	send(enter)
	scr.prompt(t, "Default partitions of new topics")
	send("4" + enter)
	scr.prompt(t, "Default replication factor")
	send("3" + enter)
	scr.expect(t, "between 1 and the broker count (2)")
	scr.prompt(t, "Default replication factor")
	send("2" + enter)
	scr.prompt(t, "min.insync.replicas")
	send("3" + enter)
	scr.expect(t, "between 1 and the replication factor (2)")
	scr.prompt(t, "min.insync.replicas")
	send("2" + enter)
	scr.prompt(t, "Allow unclean leader election")
	send("y" + enter)
	scr.prompt(t, "Move leadership back to preferred replicas")
	send("n" + enter)
	scr.expect(t, "default partition assignor")
	send("\x1b[B" + enter) // down to roundrobin
	scr.expect(t, "Compression")
	send(enter)
	scr.expect(t, "Summary")
	scr.prompt(t, "Write these files?")
	send(enter)
	scr.prompt(t, "Start the cluster now?")
	send("n" + enter)
	scr.expect(t, "ktool cluster up --from "+dir)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("init: %v\n%s", err, scr.buf.String())
	}
	<-copied

	spec, ok, err := ReadSpec(dir)
	if err != nil || !ok {
		t.Fatalf("ReadSpec: %v %v", ok, err)
	}
	if spec.Brokers != 2 || spec.BasePort != base || spec.MetricsBasePort != 0 || spec.Partitions != 4 ||
		spec.ReplicationFactor != 2 || spec.MinInsyncReplicas != 2 || !spec.UncleanElection || spec.AutoLeaderRebalance ||
		spec.Assignor != "roundrobin" || spec.Compression != "producer" || spec.ZooKeeper != ZKEmbedded {
		t.Fatalf("spec %+v", spec)
	}
	if _, err := os.Stat(ConfigPath(dir, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cluster.json")); err == nil {
		t.Fatal("the cluster was started after answering no")
	}
}

// bytesCopy copies until the terminal closes (EIO once the child exits).
func bytesCopy(dst *screen, src *os.File) (int64, error) {
	buf := make([]byte, 4096)
	var n int64
	for {
		k, err := src.Read(buf)
		if k > 0 {
			_, _ = dst.Write(buf[:k])
			n += int64(k)
		}
		if err != nil {
			return n, err
		}
	}
}
