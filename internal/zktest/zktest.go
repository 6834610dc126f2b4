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

// Server is one running standalone ZooKeeper.
type Server struct {
	t       testing.TB
	install zkinstall.Install
	dir     string

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
	s := &Server{t: t, install: in, dir: t.TempDir()}
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

// Addr is the client address, 127.0.0.1:port; it stays the same across
// restarts.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
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
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd, err := s.install.Command(context.Background(), zkinstall.Config{Dir: s.dir, Port: s.port, TickTime: TickTime})
	if err != nil {
		return err
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
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
	if err := waitReady(addr, done); err != nil {
		s.halt(false)
		return err
	}
	return nil
}

// waitReady polls "ruok" until the server answers, then opens a real
// session, all within startTimeout.
func waitReady(addr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-exited:
			return errors.New("server exited during startup")
		default:
		}
		if ruok(addr) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer to ruok on %s within %v", addr, startTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	conn, events, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
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

func ruok(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, "ruok"); err != nil {
		return false
	}
	b, _ := io.ReadAll(bufio.NewReader(c))
	return bytes.Equal(b, []byte("imok"))
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
