package chaos

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/zktest"
)

// readyTimeout bounds a broker start. After a SIGKILL the new process waits
// for the old ZooKeeper session to expire first (up to the session timeout).
const readyTimeout = 90 * time.Second

// cluster is a set of `ktool broker start` processes sharing one ZooKeeper
// chroot. Each broker keeps its port and log dir across restarts; its stdout
// and stderr go to one file per broker, appended across restarts.
type cluster struct {
	t         *testing.T
	bin       string
	zk        string
	dir       string
	overrides []string

	chroot  string
	zkProxy map[int32]*zkProxy // each broker reaches ZooKeeper through its own proxy

	mu      sync.Mutex
	ports   map[int32]int
	procs   map[int32]*brokerProc
	clients map[int32]*kgo.Client
}

// brokerProc is one run of a broker process.
type brokerProc struct {
	cmd   *exec.Cmd
	ready chan struct{}
	done  chan struct{}
	err   error
}

// brokerOverrides are the settings every chaos cluster runs with: quick
// session expiry and ISR shrink, and min.insync.replicas=2 so acks=all
// means two copies.
func brokerOverrides() []string {
	return []string{
		"zookeeper.session.timeout.ms=6000",
		"replica.lag.time.max.ms=5000",
		"min.insync.replicas=2",
		"default.replication.factor=3",
		"unclean.leader.election.enable=false",
	}
}

// newCluster starts a ZooKeeper and n brokers (ids 1..n) under chroot and
// waits until all are ready, with brokerOverrides and then extra settings
// (name=value). Everything is stopped when the test ends, and the tail of
// each broker's log is printed if it failed.
func newCluster(t *testing.T, n int, chroot string, extra ...string) *cluster {
	t.Helper()
	bin := ktoolBinary(t)
	zks := zktest.Start(t)
	c := &cluster{
		t:         t,
		bin:       bin,
		zk:        zks.Addr() + chroot,
		dir:       t.TempDir(),
		overrides: append(brokerOverrides(), extra...),
		chroot:    chroot,
		zkProxy:   map[int32]*zkProxy{},
		ports:     map[int32]int{},
		procs:     map[int32]*brokerProc{},
		clients:   map[int32]*kgo.Client{},
	}
	t.Cleanup(c.close)
	for id := int32(1); id <= int32(n); id++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		c.ports[id] = port
		px, err := newZkProxy(zks.Addr())
		if err != nil {
			t.Fatal(err)
		}
		c.zkProxy[id] = px
		t.Cleanup(px.close)
	}
	for id := int32(1); id <= int32(n); id++ {
		c.start(id)
	}
	for id := int32(1); id <= int32(n); id++ {
		c.waitReady(id)
	}
	return c
}

// freePort finds a port on 127.0.0.1 below Linux's ephemeral range (32768
// and up), so that no outgoing connection takes it while its broker is down
// between a kill and a restart.
func freePort() (int, error) {
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
	return 0, fmt.Errorf("no free port below 32768: %w", err)
}

// ids lists the broker ids, sorted.
func (c *cluster) ids() []int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]int32, 0, len(c.ports))
	for id := range c.ports {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// addrs are the listener addresses of all brokers, running or not.
func (c *cluster) addrs() []string {
	var out []string
	for _, id := range c.ids() {
		out = append(out, c.addr(id))
	}
	return out
}

func (c *cluster) addr(id int32) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.ports[id]))
}

// logDir is broker id's log.dirs.
func (c *cluster) logDir(id int32) string {
	return filepath.Join(c.dir, fmt.Sprintf("broker-%d", id), "data")
}

func (c *cluster) logPath(id int32) string {
	return filepath.Join(c.dir, fmt.Sprintf("broker-%d", id), "broker.log")
}

// start launches broker id without waiting for it to be ready.
func (c *cluster) start(id int32) {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.procs[id]; p != nil && !p.exited() {
		c.t.Fatalf("broker %d is already running", id)
	}
	if err := os.MkdirAll(c.logDir(id), 0o755); err != nil {
		c.t.Fatal(err)
	}
	logf, err := os.OpenFile(c.logPath(id), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "=== chaos: starting broker %d at %s\n", id, time.Now().UTC().Format(time.RFC3339Nano))
	args := []string{"broker", "start",
		"--broker-id", strconv.Itoa(int(id)),
		"--listeners", "PLAINTEXT://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(c.ports[id])),
		"--log-dirs", c.logDir(id),
		"--zookeeper", c.zkProxy[id].addr() + c.chroot,
	}
	for _, o := range c.overrides {
		args = append(args, "--override", o)
	}
	// Our own pipe rather than StdoutPipe: Wait must not depend on reading
	// stdout to its end.
	pr, pw, err := os.Pipe()
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(c.bin, args...)
	cmd.Stdout = pw
	cmd.Stderr = logf
	cmd.SysProcAttr = brokerProcAttr()
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		c.t.Fatalf("start broker %d: %v", id, err)
	}
	pw.Close()
	p := &brokerProc{cmd: cmd, ready: make(chan struct{}), done: make(chan struct{})}
	c.procs[id] = p
	outf, err := os.OpenFile(c.logPath(id), os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	readyLine := fmt.Sprintf("ktool broker %d ready:", id)
	go func() {
		defer pr.Close()
		defer outf.Close()
		sc := bufio.NewScanner(pr)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintf(outf, "stdout: %s\n", line)
			if !signalled && strings.HasPrefix(line, readyLine) {
				signalled = true
				close(p.ready)
			}
		}
	}()
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
}

func (p *brokerProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (c *cluster) proc(id int32) *brokerProc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.procs[id]
}

// waitReady waits until broker id printed its ready line.
func (c *cluster) waitReady(id int32) {
	c.t.Helper()
	if err := c.awaitReady(id); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) awaitReady(id int32) error {
	p := c.proc(id)
	if p == nil {
		return fmt.Errorf("broker %d was never started", id)
	}
	timer := time.NewTimer(readyTimeout)
	defer timer.Stop()
	select {
	case <-p.ready:
		return nil
	case <-p.done:
		return fmt.Errorf("broker %d exited before it was ready (%v); log tail:\n%s", id, p.err, c.logTail(id, 40))
	case <-timer.C:
		return fmt.Errorf("broker %d not ready after %v; log tail:\n%s", id, readyTimeout, c.logTail(id, 40))
	}
}

// kill sends SIGKILL to broker id and waits for the process to die.
func (c *cluster) kill(id int32) {
	c.t.Helper()
	p := c.proc(id)
	if p == nil || p.exited() {
		c.t.Fatalf("broker %d is not running", id)
	}
	c.note(id, "SIGKILL")
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// pause freezes broker id with SIGSTOP: its connections stay open but
// nothing is read, and its ZooKeeper session expires.
func (c *cluster) pause(id int32) {
	c.t.Helper()
	p := c.proc(id)
	if p == nil || p.exited() {
		c.t.Fatalf("broker %d is not running", id)
	}
	c.note(id, "SIGSTOP")
	_ = p.cmd.Process.Signal(syscall.SIGSTOP)
}

// resume lets a paused broker id run again with SIGCONT.
func (c *cluster) resume(id int32) {
	c.t.Helper()
	p := c.proc(id)
	if p == nil || p.exited() {
		c.t.Fatalf("broker %d is not running", id)
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	c.note(id, "SIGCONT")
}

// cutZK cuts broker id from ZooKeeper (and from nothing else) in mode m:
// proxyBlackhole or proxyReset; proxyPass ends the cut.
func (c *cluster) cutZK(id int32, m proxyMode) {
	c.note(id, "ZooKeeper "+m.String())
	c.zkProxy[id].set(m)
}

// terminate sends SIGTERM to broker id and waits up to timeout for it to
// exit, returning its exit error (nil for a clean exit).
func (c *cluster) terminate(id int32, timeout time.Duration) error {
	p := c.proc(id)
	if p == nil || p.exited() {
		return fmt.Errorf("broker %d is not running", id)
	}
	c.note(id, "SIGTERM")
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return p.err
	case <-timer.C:
		return fmt.Errorf("broker %d still running %v after SIGTERM", id, timeout)
	}
}

// note marks an event in broker id's log file, to line up the log with the
// test's actions.
func (c *cluster) note(id int32, what string) {
	f, err := os.OpenFile(c.logPath(id), os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "=== chaos: %s broker %d at %s\n", what, id, time.Now().UTC().Format(time.RFC3339Nano))
}

// logTail is the last n lines of broker id's log.
func (c *cluster) logTail(id int32, n int) string {
	b, err := os.ReadFile(c.logPath(id))
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (c *cluster) close() {
	for _, id := range c.ids() {
		if p := c.proc(id); p != nil && !p.exited() {
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			<-p.done
		}
	}
	if c.t.Failed() {
		for _, id := range c.ids() {
			c.t.Logf("broker %d log tail (%s):\n%s", id, c.logPath(id), c.logTail(id, 80))
		}
	}
	if keep := os.Getenv("KTOOL_CHAOS_KEEP"); keep != "" {
		dst := filepath.Join(keep, fmt.Sprintf("%s-%d", strings.ReplaceAll(c.t.Name(), "/", "_"), time.Now().Unix()))
		if err := os.CopyFS(dst, os.DirFS(c.dir)); err != nil {
			c.t.Logf("keeping %s: %v", c.dir, err)
		} else {
			c.t.Logf("broker data and logs kept in %s", dst)
		}
	}
}

// client is a kgo client seeded with every broker, closed when the test
// ends.
func (c *cluster) client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(c.addrs()...),
		kgo.MetadataMinAge(100 * time.Millisecond),
		kgo.MetadataMaxAge(2 * time.Second),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

func (c *cluster) admin() *kadm.Client { return kadm.NewClient(c.client()) }

// brokerMetadata asks broker id itself (not any broker) for its metadata of
// topics, or of no topic.
func (c *cluster) brokerMetadata(ctx context.Context, id int32, topics ...string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	if len(topics) == 0 {
		req.Topics = []kmsg.MetadataRequestTopic{}
	}
	return req.RequestWith(ctx, c.brokerClient(id))
}

// brokerClient is a client that sends requests to broker id only.
func (c *cluster) brokerClient(id int32) *kgo.Broker {
	c.mu.Lock()
	cl := c.clients[id]
	c.mu.Unlock()
	if cl == nil {
		cl = c.client(kgo.SeedBrokers(c.addr(id)))
		c.mu.Lock()
		if prev := c.clients[id]; prev != nil {
			cl = prev
		} else {
			c.clients[id] = cl
		}
		c.mu.Unlock()
	}
	return cl.Broker(int(id))
}

// listedBy is nil when every broker but id itself lists id as live in its
// metadata (want true) or none does (want false).
func (c *cluster) listedBy(ctx context.Context, id int32, want bool) error {
	for _, other := range c.ids() {
		if other == id {
			continue
		}
		m, err := c.brokerMetadata(ctx, other)
		if err != nil {
			return fmt.Errorf("metadata of broker %d: %w", other, err)
		}
		listed := slices.ContainsFunc(m.Brokers, func(b kmsg.MetadataResponseBroker) bool { return b.NodeID == id })
		if listed != want {
			return fmt.Errorf("broker %d lists broker %d as live: %v", other, id, listed)
		}
	}
	return nil
}

// attemptTimeout bounds one call of a poll's condition, so that a request
// stuck on a frozen broker does not use up the whole wait.
const attemptTimeout = 3 * time.Second

// poll calls f every 50 ms until it returns nil, ctx ends or timeout passes;
// the error then is f's last one.
func poll(ctx context.Context, timeout time.Duration, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		actx, acancel := context.WithTimeout(ctx, attemptTimeout)
		err := f(actx)
		acancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("after %v: %w", timeout, err)
		case <-tick.C:
		}
	}
}

// createTopic creates topic and waits until every partition has a leader
// and a full ISR.
func (c *cluster) createTopic(ctx context.Context, topic string, partitions int32, rf int16) {
	t := c.t
	t.Helper()
	resp, err := c.admin().CreateTopic(ctx, partitions, rf, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	if err := poll(ctx, 60*time.Second, func(ctx context.Context) error {
		return c.fullISR(ctx, topic, int(partitions))
	}); err != nil {
		t.Fatal(err)
	}
}

// fullISR is nil when every broker's own metadata shows topic with want
// partitions, each with a leader and ISR == replicas. Every broker is asked
// because a broker that was frozen answers from its stale cache until the
// controller updates it.
func (c *cluster) fullISR(ctx context.Context, topic string, want int) error {
	for _, id := range c.ids() {
		m, err := c.brokerMetadata(ctx, id, topic)
		if err != nil {
			return fmt.Errorf("metadata of broker %d: %w", id, err)
		}
		if len(m.Topics) != 1 {
			return fmt.Errorf("broker %d: %d topics in metadata, want 1", id, len(m.Topics))
		}
		td := m.Topics[0]
		if err := kerr.ErrorForCode(td.ErrorCode); err != nil {
			return fmt.Errorf("broker %d: topic %s: %w", id, topic, err)
		}
		if len(td.Partitions) != want {
			return fmt.Errorf("broker %d: topic %s: %d partitions, want %d", id, topic, len(td.Partitions), want)
		}
		for _, p := range td.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil || p.Leader < 0 {
				return fmt.Errorf("broker %d: %s-%d: leader %d (%v)", id, topic, p.Partition, p.Leader, err)
			}
			if !sameSet(p.ISR, p.Replicas) {
				return fmt.Errorf("broker %d: %s-%d: isr %v, replicas %v", id, topic, p.Partition, p.ISR, p.Replicas)
			}
		}
	}
	return nil
}

func sameSet(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
