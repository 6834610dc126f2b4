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

	"github.com/ktoolhq/ktool/internal/testbin"
	"github.com/ktoolhq/ktool/internal/zkinstall"
)

// ktoolBin is the binary the terminal test drives, built by TestMain.
var (
	ktoolBin string
	buildErr error
)

func TestMain(m *testing.M) {
	var cleanup func()
	ktoolBin, cleanup, buildErr = testbin.Build()
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// screen collects what the program writes to its terminal and plays the
// terminal's part in the dialogue: survey asks for the cursor position
// (ESC[6n) and waits for the answer (ESC[row;colR).
type screen struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	seen     int   // how far expect has matched
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

// prompt waits for a question: its text, then the cursor position requests
// survey makes before it reads a line (terminal size and cursor position),
// answered.
func (s *screen) prompt(t *testing.T, text string, cursorQueries int) {
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
		if n >= cursorQueries {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q: survey never asked for the cursor position", text)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// wait reports whether text appears after what was matched before, within d.
func (s *screen) wait(text string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		s.mu.Lock()
		i := strings.Index(s.buf.String()[s.seen:], text)
		if i >= 0 {
			s.seen += i + len(text)
		}
		s.mu.Unlock()
		if i >= 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// String is everything on the screen so far.
func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
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
	base := freePort(t, 2)

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
	// answer waits for question (a line question, cursorQueries 2, or a
	// list, 0), types keys and waits for confirm, the screen's reaction.
	// survey reads the terminal's answer to its cursor query through a
	// buffer it then drops, so keys typed while it reads are lost now and
	// then; they are typed again when nothing happened. Keys that arrive
	// late instead would show on the screen as a wrong answer.
	answer := func(question string, cursorQueries int, keys, confirm string) {
		t.Helper()
		scr.prompt(t, question, cursorQueries)
		for attempt := 1; ; attempt++ {
			if _, err := tty.Write([]byte(keys)); err != nil {
				t.Fatal(err)
			}
			if scr.wait(confirm, 3*time.Second) {
				return
			}
			if attempt == 3 {
				t.Fatalf("%q: no %q on the screen after typing %q %d times:\n%s", question, confirm, keys, attempt, scr.String())
			}
		}
	}
	const enter = "\r"
	const line, list = 2, 0

	answer("Where will the cluster run?", list, enter, "run? this machine (a local cluster)")
	answer("Number of brokers", line, "2"+enter, "Number of brokers: 2")
	answer("Host the brokers listen on", line, enter, "Host the brokers listen on: 127.0.0.1")
	answer("Port of broker 0", line, strconv.Itoa(busyPort)+enter, "ports in use")
	answer("Port of broker 0", line, strconv.Itoa(base)+enter, "(broker N gets port+N): "+strconv.Itoa(base))
	answer("Metrics port of broker 0", line, enter, "(0 for none): 0")
	answer("Default partitions of new topics", line, "4"+enter, "(num.partitions): 4")
	answer("Default replication factor", line, "3"+enter, "between 1 and the broker count (2)")
	answer("Default replication factor", line, "2"+enter, "Default replication factor: 2")
	answer("min.insync.replicas", line, "3"+enter, "between 1 and the replication factor (2)")
	answer("min.insync.replicas", line, "2"+enter, "min.insync.replicas: 2")
	answer("Allow unclean leader election", line, "y"+enter, "losing data)? Yes")
	answer("Move leadership back to preferred replicas", line, "n"+enter, "automatically? No")
	answer("Secure the cluster", line, "n"+enter, "sample users)? No")
	answer("default partition assignor", list, "\x1b[B"+enter, "assignor: roundrobin")
	answer("Compression", list, enter, "(compression.type): producer")
	scr.expect(t, "Summary")
	answer("Write these files?", line, enter, "Write these files? Yes")
	answer("Start the cluster now?", line, "n"+enter, "Start the cluster now? No")
	scr.expect(t, "ktool cluster up --from "+dir)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("init: %v\n%s", err, scr.String())
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

// TestInitHostsInteractive: without --hosts, on a terminal, init asks
// whether the cluster runs on real machines and then for the hosts, racks,
// ensemble, port, data dir and output dir, and writes the per-host set.
func TestInitHostsInteractive(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	home := t.TempDir()
	dir := filepath.Join(home, "prod")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ktoolBin, "cluster", "init", "--broker-port", "19092")
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
	answer := func(question string, cursorQueries int, keys, confirm string) {
		t.Helper()
		scr.prompt(t, question, cursorQueries)
		for attempt := 1; ; attempt++ {
			if _, err := tty.Write([]byte(keys)); err != nil {
				t.Fatal(err)
			}
			if scr.wait(confirm, 3*time.Second) {
				return
			}
			if attempt == 3 {
				t.Fatalf("%q: no %q on the screen after typing %q %d times:\n%s", question, confirm, keys, attempt, scr.String())
			}
		}
	}
	const enter = "\r"
	const line = 2
	// --broker-port was given: it is a real-machines flag, so that is not
	// asked, nor is the port.
	answer("Hosts, one broker each", line, "k1,k2,k1"+enter, "listed twice")
	answer("Hosts, one broker each", line, "k1,k2,k3,k4"+enter, "comma-separated): k1,k2,k3,k4")
	answer("Racks, one per host", line, "a,b"+enter, "2 racks for 4 hosts")
	answer("Racks, one per host", line, "a,b,c,a"+enter, "empty: no racks): a,b,c,a")
	answer("Hosts of the ZooKeeper ensemble", line, enter, "odd number of them): k1,k2,k3")
	answer("Data directory on every host", line, "/disk1/kafka,/disk2/kafka"+enter, "several disks): /disk1/kafka,/disk2/kafka")
	answer("Write the files under", line, ""+dir+enter, "files under: "+dir)
	answer("Write the files of 4 brokers", line, enter, "? Yes")
	scr.expect(t, "Wrote the files of 4 brokers")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("init: %v\n%s", err, scr.String())
	}
	<-copied
	props, err := os.ReadFile(filepath.Join(dir, "k4", "server.properties"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"broker.rack=a\n", "listeners=PLAINTEXT://0.0.0.0:19092", "log.dirs=/disk1/kafka,/disk2/kafka\n", "zookeeper.connect=k1:2181,k2:2181,k3:2181"} {
		if !strings.Contains(string(props), want) {
			t.Errorf("k4/server.properties lacks %q:\n%s", want, props)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "k3", "myid")); err != nil {
		t.Error(err)
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

// TestInitOffersEnsemble answers the ZooKeeper questions only (the others
// are flags): a local ensemble of 3, on a client port whose node ports are
// checked.
func TestInitOffersEnsemble(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	if _, err := zkinstall.Find(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI needs a ZooKeeper installation: %v", err)
		}
		t.Skipf("SKIPPING: no local ZooKeeper to offer: %v", err)
	}
	home := t.TempDir()
	dir := filepath.Join(home, "kc")
	base := freePort(t, 2)
	zkPort := freePort(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ktoolBin, "cluster", "init", "--dir", dir, "-n", "2", "--host", "127.0.0.1",
		"--base-port", strconv.Itoa(base), "--metrics-base-port", "0", "--partitions", "1", "--replication-factor", "2",
		"--min-insync-replicas", "1", "--unclean-leader-election=false", "--auto-leader-rebalance=false", "--secure=false",
		"--assignor", "range", "--compression", "producer")
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
	answer := func(question string, cursorQueries int, keys, confirm string) {
		t.Helper()
		scr.prompt(t, question, cursorQueries)
		for attempt := 1; ; attempt++ {
			if _, err := tty.Write([]byte(keys)); err != nil {
				t.Fatal(err)
			}
			if scr.wait(confirm, 3*time.Second) {
				return
			}
			if attempt == 3 {
				t.Fatalf("%q: no %q on the screen after typing %q %d times:\n%s", question, confirm, keys, attempt, scr.String())
			}
		}
	}
	const enter = "\r"
	const down = "\x1b[B"
	const line, list = 2, 0
	answer("Where will the cluster run?", list, enter, "Where will the cluster run? this machine")
	answer("ZooKeeper:", list, enter, "ZooKeeper: start one locally")
	answer("ZooKeeper nodes:", list, down+enter, "ZooKeeper nodes: 3")
	answer("ZooKeeper client port:", line, "\x15"+strconv.Itoa(zkPort)+enter, "ZooKeeper client port: "+strconv.Itoa(zkPort))
	scr.expect(t, "Summary")
	answer("Write these files?", line, enter, "Write these files? Yes")
	answer("Start the cluster now?", line, "n"+enter, "Start the cluster now? No")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("init: %v\n%s", err, scr.String())
	}
	<-copied
	spec, ok, err := ReadSpec(dir)
	if err != nil || !ok {
		t.Fatalf("ReadSpec: %v %v", ok, err)
	}
	if spec.ZooKeeper != ZKLocal || spec.ZooKeeperNodes != 3 || spec.ZooKeeperPort != zkPort {
		t.Fatalf("spec %+v", spec)
	}
	props, err := os.ReadFile(ConfigPath(dir, 0))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", zkPort, zkPort+1, zkPort+2); !strings.Contains(string(props), want) {
		t.Fatalf("server.properties lacks zookeeper.connect %s:\n%s", want, props)
	}
}
