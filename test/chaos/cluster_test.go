package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/brokerproc"
	"github.com/ktoolhq/ktool/internal/zktest"
)

// readyTimeout bounds a broker start. After a SIGKILL the new process waits
// for the old ZooKeeper session to expire first (up to the session timeout).
const readyTimeout = 90 * time.Second

// cluster is a set of `ktool broker start` processes (internal/brokerproc)
// sharing one ZooKeeper chroot, each through its own proxy. Each broker keeps
// its port and log dir across restarts; its stdout and stderr go to one file
// per broker, appended across restarts.
type cluster struct {
	t         *testing.T
	zk        string
	dir       string
	overrides []string

	chroot  string
	zkProxy map[int32]*zkProxy // each broker reaches ZooKeeper through its own proxy

	brokers map[int32]*brokerproc.Broker

	mu      sync.Mutex
	clients map[int32]*kgo.Client
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
		zk:        zks.Addr() + chroot,
		dir:       t.TempDir(),
		overrides: append(brokerOverrides(), extra...),
		chroot:    chroot,
		zkProxy:   map[int32]*zkProxy{},
		brokers:   map[int32]*brokerproc.Broker{},
		clients:   map[int32]*kgo.Client{},
	}
	t.Cleanup(c.close)
	ports := map[int]bool{}
	for id := int32(1); id <= int32(n); id++ {
		port, err := brokerproc.FreePort()
		for err == nil && ports[port] {
			port, err = brokerproc.FreePort()
		}
		if err != nil {
			t.Fatal(err)
		}
		ports[port] = true
		px, err := newZkProxy(zks.Addr())
		if err != nil {
			t.Fatal(err)
		}
		c.zkProxy[id] = px
		t.Cleanup(px.close)
		b, err := brokerproc.New(brokerproc.Spec{Bin: bin, ID: id, Port: port, Dir: c.logDir(id),
			ZooKeeper: px.addr() + chroot, Overrides: c.overrides, LogFile: c.logPath(id), ReadyTimeout: readyTimeout})
		if err != nil {
			t.Fatal(err)
		}
		c.brokers[id] = b
	}
	for id := int32(1); id <= int32(n); id++ {
		c.start(id)
	}
	for id := int32(1); id <= int32(n); id++ {
		c.waitReady(id)
	}
	return c
}

// ids lists the broker ids, sorted.
func (c *cluster) ids() []int32 {
	ids := make([]int32, 0, len(c.brokers))
	for id := range c.brokers {
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

func (c *cluster) addr(id int32) string { return c.brokers[id].Addr() }

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
	if err := c.brokers[id].Launch(); err != nil {
		c.t.Fatal(err)
	}
}

// waitReady waits until broker id printed its ready line.
func (c *cluster) waitReady(id int32) {
	c.t.Helper()
	if err := c.awaitReady(id); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) awaitReady(id int32) error { return c.brokers[id].WaitReady() }

// running returns broker id, failing the test unless it is running.
func (c *cluster) running(id int32) *brokerproc.Broker {
	c.t.Helper()
	b := c.brokers[id]
	if !b.Running() {
		c.t.Fatalf("broker %d is not running", id)
	}
	return b
}

// kill sends SIGKILL to broker id and waits for the process to die.
func (c *cluster) kill(id int32) {
	c.t.Helper()
	if err := c.running(id).Kill(); err != nil {
		c.t.Fatal(err)
	}
}

// pause freezes broker id with SIGSTOP: its connections stay open but
// nothing is read, and its ZooKeeper session expires.
func (c *cluster) pause(id int32) {
	c.t.Helper()
	if err := c.running(id).Pause(); err != nil {
		c.t.Fatal(err)
	}
}

// resume lets a paused broker id run again with SIGCONT.
func (c *cluster) resume(id int32) {
	c.t.Helper()
	if err := c.running(id).Resume(); err != nil {
		c.t.Fatal(err)
	}
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
	return c.brokers[id].Terminate(timeout)
}

// note marks an event in broker id's log file, to line up the log with the
// test's actions.
func (c *cluster) note(id int32, what string) { c.brokers[id].Note(what) }

// logTail is the last n lines of broker id's log.
func (c *cluster) logTail(id int32, n int) string { return c.brokers[id].Tail(n) }

func (c *cluster) close() {
	for _, id := range c.ids() {
		if b := c.brokers[id]; b.Running() {
			_ = b.Kill()
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
