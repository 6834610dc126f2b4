package zktest

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
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ktoolhq/ktool/internal/zkinstall"
)

// TickTime is the servers' tick: sessions may time out between 2 and 20
// ticks (0.5 s to 5 s), so tests can expire sessions quickly.
const TickTime = 250 * time.Millisecond

// startTimeout bounds one start, JVM boot included (about 1.5 s usually).
const startTimeout = 60 * time.Second

// Server is one running ZooKeeper: standalone, or one node of an Ensemble.
type Server struct {
	t       testing.TB
	install zkinstall.Install
	dir     string
	host    string
	exec    []string
	dial    Dialer
	peers   []zkinstall.Peer
	myid    int

	mu   sync.Mutex
	port int
	cmd  *exec.Cmd
	done chan struct{}
}

// Find reports the java command line (java, -cp, classpath) of the local
// ZooKeeper installation, if there is one.
func Find() (javaCmd []string, ok bool) {
	in, err := zkinstall.Find()
	if err != nil {
		return nil, false
	}
	return []string{in.Java, "-cp", strings.Join(in.Classpath, string(os.PathListSeparator))}, true
}

// Start runs a ZooKeeper server for the test and waits until it serves a
// session. It is stopped when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	in, err := zkinstall.Find()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("zktest: CI=true requires a ZooKeeper installation: %v", err)
		}
		t.Skipf("\n\n*** SKIPPING %s: tests against a real ZooKeeper did NOT run ***\n*** %v ***\n\n", t.Name(), err)
	}
	s := &Server{t: t, install: in, dir: t.TempDir(), host: "127.0.0.1", dial: net.DialTimeout}
	t.Cleanup(func() {
		s.Kill()
		if t.Failed() {
			t.Logf("zookeeper output:\n%s", s.output())
		}
	})
	// A free port can be taken by someone else before the JVM binds it, so
	// the first start tries a few.
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		s.port = port
		err = s.start()
		if err == nil {
			return s
		}
		if attempt == 2 {
			t.Fatalf("zktest: start ZooKeeper (%s): %v\n%s", in.Source, err, s.output())
		}
	}
}

// Addr is the client address, host:port; it stays the same across
// restarts.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return net.JoinHostPort(s.host, strconv.Itoa(s.port))
}

// Stop shuts the server down gracefully (SIGTERM) and waits for it.
func (s *Server) Stop() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.halt(true)
}

// Kill kills the server (SIGKILL) and waits for it to die.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.halt(false)
}

// Restart stops the server if it runs and starts it again on the same port
// and data, waiting until it serves a session.
func (s *Server) Restart() {
	s.t.Helper()
	s.mu.Lock()
	s.halt(true)
	s.mu.Unlock()
	if err := s.start(); err != nil {
		s.t.Fatalf("zktest: restart ZooKeeper: %v\n%s", err, s.output())
	}
}

// Signal sends sig to the server's process: SIGSTOP freezes it while its
// kernel still accepts connections (into the listen backlog), SIGCONT thaws
// it.
func (s *Server) Signal(sig os.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("zktest: server not running")
	}
	return s.cmd.Process.Signal(sig)
}

// Running reports whether the server's process runs.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

func (s *Server) halt(graceful bool) {
	if s.cmd == nil {
		return
	}
	if graceful {
		s.cmd.Process.Signal(os.Interrupt)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
		}
	}
	s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

func (s *Server) logPath() string { return filepath.Join(s.dir, "zookeeper.out") }

// output is the tail of the server's log, for failure messages.
func (s *Server) output() string {
	b, err := os.ReadFile(s.logPath())
	if err != nil {
		return ""
	}
	const max = 8 << 10
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

func (s *Server) start() error {
	if err := s.launch(); err != nil {
		return err
	}
	return s.wait()
}

// launch starts the process without waiting for it to serve.
func (s *Server) launch() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd, err := s.install.Command(context.Background(), zkinstall.Config{Dir: s.dir, Port: s.port, Host: s.host,
		TickTime: TickTime, Ensemble: s.peers, MyID: s.myid})
	if err != nil {
		return err
	}
	if len(s.exec) > 0 {
		path, err := exec.LookPath(s.exec[0])
		if err != nil {
			return err
		}
		cmd.Path = path
		cmd.Args = append(append([]string(nil), s.exec...), cmd.Args...)
	}
	out, err := os.OpenFile(s.logPath(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	s.cmd, s.done = cmd, done
	return nil
}

// wait waits until the launched server serves a session (for a node of an
// ensemble: until the ensemble has a quorum); a server that does not is
// killed.
func (s *Server) wait() error {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if done == nil {
		return errors.New("not running")
	}
	if err := waitReady(s.Addr(), done, s.dial); err != nil {
		s.Kill()
		return err
	}
	return nil
}

// waitReady polls "ruok" until the server answers, then opens a real
// session, all within startTimeout.
func waitReady(addr string, exited <-chan struct{}, dial Dialer) error {
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-exited:
			return errors.New("server exited during startup")
		default:
		}
		if ruok(addr, dial) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer to ruok on %s within %v", addr, startTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	conn, events, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogger(quiet{}), zk.WithLogInfo(false), zk.WithDialer(zk.Dialer(dial)))
	if err != nil {
		return err
	}
	defer conn.Close()
	timeout := time.After(time.Until(deadline))
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return nil
			}
		case <-exited:
			return errors.New("server exited during startup")
		case <-timeout:
			return fmt.Errorf("no session from %s within %v", addr, startTimeout)
		}
	}
}

func ruok(addr string, dial Dialer) bool {
	b, err := fourLetters(addr, "ruok", dial)
	return err == nil && bytes.Equal(b, []byte("imok"))
}

// fourLetters sends a four-letter-word command and returns the answer.
func fourLetters(addr, cmd string, dial Dialer) ([]byte, error) {
	c, err := dial("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, cmd); err != nil {
		return nil, err
	}
	return io.ReadAll(bufio.NewReader(c))
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}
