package brokerproc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultReadyTimeout bounds a start when Spec.ReadyTimeout is zero. A broker
// restarted after a SIGKILL first waits for its old ZooKeeper session to
// expire (up to the session timeout).
const DefaultReadyTimeout = 90 * time.Second

// Spec says how to run one broker.
type Spec struct {
	Bin string // the ktool binary
	ID  int32  // --broker-id
	// Port is the listener's port on Host; 0 picks a free one on
	// 127.0.0.1, kept across restarts.
	Port int
	// Host is the listener's address; 127.0.0.1 when empty.
	Host string
	// Exec, when set, is a command prefix the broker runs under, such as
	// ip netns exec NAME (which execs the broker, so the process started
	// is the broker itself).
	Exec      []string
	Dir       string   // --log-dirs; created if missing
	ZooKeeper string   // --zookeeper (host:port/chroot); empty runs standalone
	Overrides []string // key=value settings, each passed as --override
	Args      []string // more flags of `ktool broker start`
	// LogFile receives the broker's output, appended across restarts; empty
	// keeps it in memory.
	LogFile      string
	ReadyTimeout time.Duration
}

// Broker is one broker, running or not: each start is a new process on the
// same port and directories.
type Broker struct {
	spec Spec

	mu  sync.Mutex
	run *run
	mem *buffer // the output when spec.LogFile is empty
}

// run is one process of a broker.
type run struct {
	cmd     *exec.Cmd
	ready   chan struct{} // closed on the ready line
	done    chan struct{} // closed once the process has exited
	line    Ready
	err     error // the exit status, once done is closed
	logFrom int   // length of the output when this run began
}

// New prepares a broker without starting it.
func New(spec Spec) (*Broker, error) {
	if spec.Bin == "" || spec.Dir == "" {
		return nil, errors.New("brokerproc: Spec needs Bin and Dir")
	}
	if spec.ReadyTimeout <= 0 {
		spec.ReadyTimeout = DefaultReadyTimeout
	}
	b := &Broker{spec: spec}
	if spec.LogFile == "" {
		b.mem = &buffer{}
	}
	return b, nil
}

// Start starts a broker and waits until it is ready. When the port was
// chosen here and another process took it first, it tries other ports.
func Start(spec Spec) (*Broker, error) {
	b, err := New(spec)
	if err != nil {
		return nil, err
	}
	pick := spec.Port == 0
	for attempt := 0; ; attempt++ {
		if pick {
			if b.spec.Port, err = FreePort(); err != nil {
				return nil, err
			}
		}
		err = b.Restart()
		if err == nil {
			return b, nil
		}
		if !pick || attempt == 4 || !strings.Contains(b.runLogs(), "address already in use") {
			return b, err
		}
	}
}

// FreePort returns a port on 127.0.0.1 that nothing listens on, below Linux's
// ephemeral range (32768 and up) so that no outgoing connection takes it while
// its broker is down between a kill and a restart.
func FreePort() (int, error) {
	var err error
	for range 100 {
		port := 20000 + rand.IntN(12768)
		var l net.Listener
		l, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			l.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("brokerproc: no free port below 32768: %w", err)
}

// ID is the broker id.
func (b *Broker) ID() int32 { return b.spec.ID }

// Addr is the listener's host:port.
func (b *Broker) Addr() string { return net.JoinHostPort(b.host(), strconv.Itoa(b.spec.Port)) }

func (b *Broker) host() string {
	if b.spec.Host == "" {
		return "127.0.0.1"
	}
	return b.spec.Host
}

// Port is the listener's port.
func (b *Broker) Port() int { return b.spec.Port }

// Dir is the broker's log dir.
func (b *Broker) Dir() string { return b.spec.Dir }

// Launch starts a new process of the broker without waiting for it to be
// ready; it fails if one is running.
func (b *Broker) Launch() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.run != nil && !b.run.exited() {
		return fmt.Errorf("broker %d is already running", b.spec.ID)
	}
	if err := os.MkdirAll(b.spec.Dir, 0o755); err != nil {
		return err
	}
	args := []string{"broker", "start",
		"--broker-id", strconv.Itoa(int(b.spec.ID)),
		"--listeners", "PLAINTEXT://" + b.Addr(),
		"--log-dirs", b.spec.Dir,
	}
	if b.spec.ZooKeeper != "" {
		args = append(args, "--zookeeper", b.spec.ZooKeeper)
	}
	for _, o := range b.spec.Overrides {
		args = append(args, "--override", o)
	}
	args = append(args, b.spec.Args...)

	out, err := b.output()
	if err != nil {
		return err
	}
	r := &run{ready: make(chan struct{}), done: make(chan struct{}), logFrom: b.logLen()}
	b.notef(out, "starting")
	// Our own pipe rather than StdoutPipe: Wait must not depend on reading
	// stdout to its end.
	pr, pw, err := os.Pipe()
	if err != nil {
		out.Close()
		return err
	}
	argv := append(append(append([]string(nil), b.spec.Exec...), b.spec.Bin), args...)
	r.cmd = exec.Command(argv[0], argv[1:]...)
	r.cmd.Stdout = pw
	r.cmd.Stderr = out
	r.cmd.SysProcAttr = procAttr()
	if err := r.cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		out.Close()
		return fmt.Errorf("starting broker %d: %w", b.spec.ID, err)
	}
	pw.Close()
	b.run = r
	id := b.spec.ID
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintf(out, "stdout: %s\n", line)
			if ready, ok := ParseReady(line); ok && ready.ID == id && !signalled {
				signalled = true
				r.line = ready
				close(r.ready)
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() {
		r.err = r.cmd.Wait()
		<-read // the last stdout lines are written before out closes
		out.Close()
		close(r.done)
	}()
	return nil
}

// WaitReady waits until the running process printed its ready line, naming
// the broker's listener. On failure the error holds the tail of the output.
func (b *Broker) WaitReady() error {
	r := b.current()
	if r == nil {
		return fmt.Errorf("broker %d was never started", b.spec.ID)
	}
	timer := time.NewTimer(b.spec.ReadyTimeout)
	defer timer.Stop()
	select {
	case <-r.ready:
		if r.line.Addr != b.Addr() {
			return fmt.Errorf("broker %d's ready line names %s, not its listener %s", b.spec.ID, r.line.Addr, b.Addr())
		}
		return nil
	case <-r.done:
		return fmt.Errorf("broker %d exited before it was ready (%v); output:\n%s", b.spec.ID, r.err, b.Tail(40))
	case <-timer.C:
		return fmt.Errorf("broker %d not ready after %v; output:\n%s", b.spec.ID, b.spec.ReadyTimeout, b.Tail(40))
	}
}

// Restart starts the broker again on the same port and directories and waits
// until it is ready; a process that does not get ready in time is killed.
func (b *Broker) Restart() error {
	if err := b.Launch(); err != nil {
		return err
	}
	err := b.WaitReady()
	if err != nil {
		_ = b.Kill()
	}
	return err
}

// Ready is what the running (or last) process's ready line said.
func (b *Broker) Ready() Ready {
	r := b.current()
	if r == nil {
		return Ready{}
	}
	select {
	case <-r.ready:
		return r.line
	default:
		return Ready{}
	}
}

// Running reports whether a process of the broker is running.
func (b *Broker) Running() bool {
	r := b.current()
	return r != nil && !r.exited()
}

// Done is closed when the current process has exited (at once when none runs).
func (b *Broker) Done() <-chan struct{} {
	r := b.current()
	if r == nil {
		closed := make(chan struct{})
		close(closed)
		return closed
	}
	return r.done
}

// ExitErr is the exit status of the last process once it has exited (nil for
// a clean exit, or before it exited).
func (b *Broker) ExitErr() error {
	r := b.current()
	if r == nil || !r.exited() {
		return nil
	}
	return r.err
}

// PID is the running process's id (0 when none runs).
func (b *Broker) PID() int {
	r := b.current()
	if r == nil || r.exited() {
		return 0
	}
	return r.cmd.Process.Pid
}

// Signal sends sig to the running process.
func (b *Broker) Signal(sig syscall.Signal) error {
	r := b.current()
	if r == nil || r.exited() {
		return fmt.Errorf("broker %d is not running", b.spec.ID)
	}
	b.note(sigName(sig))
	return r.cmd.Process.Signal(sig)
}

// Kill sends SIGKILL and waits until the process is gone.
func (b *Broker) Kill() error {
	if err := b.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-b.Done()
	return nil
}

// Terminate sends SIGTERM and waits up to timeout for the process to exit,
// returning its exit status (nil for a clean exit). A process still running
// then is left running, with an error.
func (b *Broker) Terminate(timeout time.Duration) error {
	if err := b.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-b.Done():
		return b.ExitErr()
	case <-timer.C:
		return fmt.Errorf("broker %d still running %v after SIGTERM", b.spec.ID, timeout)
	}
}

// Stop ends the running process, if any: SIGTERM, then SIGKILL after
// timeout. The error says why the exit was not clean.
func (b *Broker) Stop(timeout time.Duration) error {
	if !b.Running() {
		return b.ExitErr()
	}
	err := b.Terminate(timeout)
	if b.Running() {
		_ = b.Kill()
		return fmt.Errorf("broker %d: no exit within %v of SIGTERM; killed", b.spec.ID, timeout)
	}
	return err
}

// Pause freezes the process with SIGSTOP: its connections stay open but
// nothing is read, and its ZooKeeper session expires.
func (b *Broker) Pause() error { return b.Signal(syscall.SIGSTOP) }

// Resume lets a paused process run again with SIGCONT.
func (b *Broker) Resume() error { return b.Signal(syscall.SIGCONT) }

// Logs is everything the broker wrote, across restarts.
func (b *Broker) Logs() string {
	if b.mem != nil {
		return b.mem.String()
	}
	data, err := os.ReadFile(b.spec.LogFile)
	if err != nil {
		return err.Error()
	}
	return string(data)
}

// Tail is the last n lines of Logs.
func (b *Broker) Tail(n int) string {
	lines := strings.Split(strings.TrimRight(b.Logs(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Note writes a marker line to the broker's output.
func (b *Broker) Note(what string) { b.note(what) }

func (b *Broker) note(what string) {
	out, err := b.output()
	if err != nil {
		return
	}
	defer out.Close()
	b.notef(out, what)
}

func (b *Broker) notef(w io.Writer, what string) {
	fmt.Fprintf(w, "=== brokerproc: %s broker %d at %s\n", what, b.spec.ID, time.Now().UTC().Format(time.RFC3339Nano))
}

// runLogs is the output of the current process only.
func (b *Broker) runLogs() string {
	r := b.current()
	logs := b.Logs()
	if r == nil || r.logFrom > len(logs) {
		return logs
	}
	return logs[r.logFrom:]
}

func (b *Broker) logLen() int {
	if b.mem != nil {
		return b.mem.Len()
	}
	st, err := os.Stat(b.spec.LogFile)
	if err != nil {
		return 0
	}
	return int(st.Size())
}

// output opens where the broker's output goes; the caller closes it.
func (b *Broker) output() (io.WriteCloser, error) {
	if b.mem != nil {
		return nopCloser{b.mem}, nil
	}
	return os.OpenFile(b.spec.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

func (b *Broker) current() *run {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.run
}

func (r *run) exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

func sigName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGSTOP:
		return "SIGSTOP"
	case syscall.SIGCONT:
		return "SIGCONT"
	}
	return sig.String()
}

// buffer is output kept in memory, written by several goroutines.
type buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *buffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
