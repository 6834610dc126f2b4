package brokertest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/broker"
	"github.com/ktoolhq/ktool/broker/config"
	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/broker/coord/embedded"
	"github.com/ktoolhq/ktool/broker/coord/zkstore"
	"github.com/ktoolhq/ktool/internal/zktest"
)

// Store says which coordination store a cluster uses.
type Store string

// The two stores every multi-broker test runs on.
const (
	Embedded  Store = "embedded"
	ZooKeeper Store = "zookeeper"
)

// Stores lists both, for table-driven tests.
var Stores = []Store{Embedded, ZooKeeper}

type options struct {
	store     Store
	props     map[string]string
	perBroker func(id int32) map[string]string
	log       bool
	codecs    broker.CodecSource
}

// Option configures a cluster.
type Option func(*options)

// WithStore picks the coordination store (default Embedded).
func WithStore(s Store) Option { return func(o *options) { o.store = s } }

// WithProps sets broker settings (Kafka names) on every broker.
func WithProps(p map[string]string) Option {
	return func(o *options) {
		for k, v := range p {
			o.props[k] = v
		}
	}
}

// WithBrokerProps sets settings that differ per broker (broker.rack, say);
// they win over WithProps.
func WithBrokerProps(f func(id int32) map[string]string) Option {
	return func(o *options) { o.perBroker = f }
}

// WithCodecs gives the brokers a codec source (tests count codec calls with it).
func WithCodecs(src broker.CodecSource) Option { return func(o *options) { o.codecs = src } }

// Cluster is a set of in-process brokers.
type Cluster struct {
	t    testing.TB
	opts options
	dir  string

	connector coord.Connector
	emb       *embedded.Server
	zk        *zktest.Server

	mu      sync.Mutex
	brokers map[int32]*broker.Broker
	ports   map[int32]int
}

// NewCluster starts n brokers with ids 0..n-1 and waits until each is ready.
func NewCluster(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	o := options{store: Embedded, props: map[string]string{}, log: os.Getenv("KTOOL_TEST_LOGS") != ""}
	for _, f := range opts {
		f(&o)
	}
	if _, ok := o.props["offsets.topic.replication.factor"]; !ok {
		o.props["offsets.topic.replication.factor"] = strconv.Itoa(min(3, n))
	}
	if _, ok := o.props["transaction.state.log.replication.factor"]; !ok {
		o.props["transaction.state.log.replication.factor"] = strconv.Itoa(min(3, n))
	}
	c := &Cluster{t: t, opts: o, dir: t.TempDir(), brokers: map[int32]*broker.Broker{}, ports: map[int32]int{}}
	switch o.store {
	case Embedded:
		srv, err := embedded.Open(filepath.Join(c.dir, "store"))
		if err != nil {
			t.Fatal(err)
		}
		c.emb, c.connector = srv, srv
	case ZooKeeper:
		c.zk = zktest.Start(t)
		chroot := c.zk.Addr() + "/ktool-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		conn, err := zkstore.NewConnector(chroot, 6*time.Second, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		c.connector = conn
	default:
		t.Fatalf("unknown store %q", o.store)
	}
	t.Cleanup(c.close)
	for id := int32(0); id < int32(n); id++ {
		c.start(id)
	}
	for id := int32(0); id < int32(n); id++ {
		c.WaitReady(id)
	}
	return c
}

func (c *Cluster) logger(id int32) *slog.Logger {
	if !c.opts.log {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(testWriter{c.t}, &slog.HandlerOptions{Level: slog.LevelInfo})).With("test_broker", id)
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// start starts broker id (new or restarted) on its own data dir and port.
func (c *Cluster) start(id int32) {
	c.t.Helper()
	props := map[string]string{
		"broker.id":                            strconv.Itoa(int(id)),
		"log.dirs":                             filepath.Join(c.dir, fmt.Sprintf("broker-%d", id)),
		"replica.lag.time.max.ms":              "3000",
		"replica.fetch.wait.max.ms":            "100",
		"replica.fetch.backoff.ms":             "100",
		"controlled.shutdown.retry.backoff.ms": "200",
		"group.initial.rebalance.delay.ms":     "0",
		"offsets.topic.num.partitions":         "4",
		"zookeeper.session.timeout.ms":         "6000",
	}
	c.mu.Lock()
	port := c.ports[id]
	c.mu.Unlock()
	props["listeners"] = fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", port)
	for k, v := range c.opts.props {
		props[k] = v
	}
	if c.opts.perBroker != nil {
		for k, v := range c.opts.perBroker(id) {
			props[k] = v
		}
	}
	cfg, err := config.NewBroker(props)
	if err != nil {
		c.t.Fatal(err)
	}
	b, err := broker.New(broker.Options{Config: cfg, Connector: c.connector, Logger: c.logger(id), Codecs: c.opts.codecs})
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		c.t.Fatalf("starting broker %d: %v", id, err)
	}
	_, p, _ := splitPort(b.Addr())
	c.mu.Lock()
	c.brokers[id] = b
	c.ports[id] = p
	c.mu.Unlock()
}

func splitPort(addr string) (string, int, error) {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			p, err := strconv.Atoi(addr[i+1:])
			return addr[:i], p, err
		}
	}
	return addr, 0, fmt.Errorf("no port in %q", addr)
}

// WaitReady waits until broker id has joined the cluster.
func (c *Cluster) WaitReady(id int32) {
	c.t.Helper()
	b := c.Broker(id)
	select {
	case <-b.Ready():
	case <-time.After(30 * time.Second):
		c.t.Fatalf("broker %d not ready after 30s", id)
	}
}

// Broker returns a running broker, or nil.
func (c *Cluster) Broker(id int32) *broker.Broker {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.brokers[id]
}

// IDs lists running brokers.
func (c *Cluster) IDs() []int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int32
	for id := range c.brokers {
		out = append(out, id)
	}
	return out
}

// Addrs lists the addresses of running brokers.
func (c *Cluster) Addrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, b := range c.brokers {
		out = append(out, b.Addr())
	}
	return out
}

// Kill stops broker id abruptly: no controlled shutdown, its session ends at once
// so the controller sees it die, as after a SIGKILL and session expiry.
func (c *Cluster) Kill(id int32) {
	c.t.Helper()
	c.mu.Lock()
	b := c.brokers[id]
	delete(c.brokers, id)
	c.mu.Unlock()
	if b == nil {
		c.t.Fatalf("broker %d is not running", id)
	}
	if err := b.Halt(); err != nil {
		c.t.Logf("halting broker %d: %v", id, err)
	}
}

// Stop shuts broker id down cleanly (controlled shutdown).
func (c *Cluster) Stop(id int32) {
	c.t.Helper()
	c.mu.Lock()
	b := c.brokers[id]
	delete(c.brokers, id)
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Shutdown(ctx); err != nil {
		c.t.Logf("stopping broker %d: %v", id, err)
	}
}

// Restart starts a stopped broker again on its data dir and port.
func (c *Cluster) Restart(id int32) {
	c.t.Helper()
	c.start(id)
	c.WaitReady(id)
}

// Client returns a franz-go client for the cluster, closed at cleanup.
func (c *Cluster) Client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	all := append([]kgo.Opt{kgo.SeedBrokers(c.Addrs()...), kgo.MetadataMinAge(50 * time.Millisecond)}, opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// Admin returns an admin client for the cluster.
func (c *Cluster) Admin() *kadm.Client { return kadm.NewClient(c.Client()) }

// Dir is the data dir of broker id.
func (c *Cluster) Dir(id int32) string { return filepath.Join(c.dir, fmt.Sprintf("broker-%d", id)) }

func (c *Cluster) close() {
	for _, id := range c.IDs() {
		c.mu.Lock()
		b := c.brokers[id]
		c.mu.Unlock()
		_ = b.Halt()
	}
	if c.emb != nil {
		_ = c.emb.Close()
	}
	_ = os.RemoveAll(filepath.Join(c.dir, "store"))
}

// Eventually polls f every 20 ms until it returns nil or timeout passes.
func Eventually(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for {
		if err = f(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not true after %v: %v", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ExpireSession ends broker id's coordination session at once, as ZooKeeper does
// when a broker stops heartbeating (embedded store only). The broker must notice,
// reconnect, re-register and rejoin controller election.
func (c *Cluster) ExpireSession(id int32) {
	c.t.Helper()
	if c.emb == nil {
		c.t.Fatal("ExpireSession needs the embedded store")
	}
	b := c.Broker(id)
	if err := c.emb.Expire(b.Store().SessionID()); err != nil {
		c.t.Fatalf("expiring broker %d's session: %v", id, err)
	}
}
