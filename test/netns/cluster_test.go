package netns

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/brokerproc"
	"github.com/ktoolhq/ktool/internal/nethost"
	"github.com/ktoolhq/ktool/internal/zktest"
)

const (
	// sessionTimeout is the brokers' zookeeper.session.timeout.ms (the
	// ensemble's 250 ms tick allows up to 5 s).
	sessionTimeout = 4 * time.Second
	brokerPort     = 9092
	chroot         = "/netns"
)

// brokerOverrides: quick session expiry and ISR shrink, acks=all meaning two
// copies, no leader moves but those the faults cause, and no waits the test
// does not measure.
func brokerOverrides() []string {
	return []string{
		fmt.Sprintf("zookeeper.session.timeout.ms=%d", sessionTimeout.Milliseconds()),
		"replica.lag.time.max.ms=3000",
		"min.insync.replicas=2",
		"default.replication.factor=3",
		"offsets.topic.replication.factor=3",
		"transaction.state.log.replication.factor=3",
		"transaction.state.log.min.isr=2",
		"unclean.leader.election.enable=false",
		"auto.leader.rebalance.enable=false",
		// The transactions the test leaves open (a producer cut off, or
		// stopped at the end) are aborted within a second of their timeout.
		"transaction.abort.timed.out.transaction.cleanup.interval.ms=1000",
		// The last broker stopped at the end has no one to hand its
		// leaderships to: it retries controlled shutdown without 5 s waits.
		"controlled.shutdown.retry.backoff.ms=200",
	}
}

// netCluster is a ZooKeeper ensemble of 3 (hosts zk1..zk3) and brokers
// (hosts b1..bN, broker id = N), each in its own network namespace, and the
// host "client" every client of the test dials from.
type netCluster struct {
	t      *testing.T
	lab    *nethost.Lab
	client *nethost.Host
	zkHost []*nethost.Host // zkHost[i] runs ZooKeeper node i+1
	host   map[int32]*nethost.Host
	zk     *zktest.Ensemble
	dir    string

	brokers map[int32]*brokerproc.Broker

	mu      sync.Mutex
	clients map[int32]*kgo.Client
	zkConn  *zk.Conn
}

func newNetCluster(t *testing.T, n int) *netCluster {
	t.Helper()
	return newNetClusterWith(t, n, brokerOverrides())
}

// newNetClusterWith starts the brokers with overrides and more flags of
// ktool broker start (args).
func newNetClusterWith(t *testing.T, n int, overrides []string, args ...string) *netCluster {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("building ktool: %v", buildErr)
	}
	lab := nethost.New(t)
	c := &netCluster{t: t, lab: lab, host: map[int32]*nethost.Host{}, brokers: map[int32]*brokerproc.Broker{},
		clients: map[int32]*kgo.Client{}, dir: t.TempDir()}
	c.client = lab.Host("client")
	var nodes []zktest.Node
	for i := 1; i <= 3; i++ {
		h := lab.Host(fmt.Sprintf("zk%d", i))
		c.zkHost = append(c.zkHost, h)
		nodes = append(nodes, zktest.Node{Host: h.IP(), Exec: h.Exec()})
	}
	for id := int32(1); id <= int32(n); id++ {
		c.host[id] = lab.Host(fmt.Sprintf("b%d", id))
	}
	c.zk = zktest.StartEnsemble(t, nodes, c.client.Dial)
	t.Cleanup(c.close)
	for id := int32(1); id <= int32(n); id++ {
		h := c.host[id]
		b, err := brokerproc.New(brokerproc.Spec{Bin: ktoolBin, ID: id, Host: h.IP(), Port: brokerPort, Exec: h.Exec(),
			Dir: c.logDir(id), ZooKeeper: c.zk.Connect() + chroot, Overrides: overrides, Args: args, LogFile: c.logPath(id),
			ReadyTimeout: 90 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		c.brokers[id] = b
	}
	for _, id := range c.ids() {
		if err := c.brokers[id].Launch(); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range c.ids() {
		if err := c.brokers[id].WaitReady(); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func (c *netCluster) ids() []int32 {
	ids := make([]int32, 0, len(c.brokers))
	for id := range c.brokers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (c *netCluster) logDir(id int32) string {
	return filepath.Join(c.dir, fmt.Sprintf("broker-%d", id), "data")
}

func (c *netCluster) logPath(id int32) string {
	return filepath.Join(c.dir, fmt.Sprintf("broker-%d", id), "broker.log")
}

func (c *netCluster) addrs() []string {
	var out []string
	for _, id := range c.ids() {
		out = append(out, c.brokers[id].Addr())
	}
	return out
}

// brokerHosts are the hosts of the brokers in ids, in order.
func (c *netCluster) brokerHosts(ids ...int32) []*nethost.Host {
	var out []*nethost.Host
	for _, id := range ids {
		out = append(out, c.host[id])
	}
	return out
}

// otherBrokers are the ids of every broker but id.
func (c *netCluster) otherBrokers(id int32) []int32 {
	var out []int32
	for _, o := range c.ids() {
		if o != id {
			out = append(out, o)
		}
	}
	return out
}

func (c *netCluster) close() {
	for _, id := range c.ids() {
		if b := c.brokers[id]; b.Running() {
			_ = b.Kill()
		}
	}
	c.mu.Lock()
	if c.zkConn != nil {
		c.zkConn.Close()
	}
	c.mu.Unlock()
	if c.t.Failed() {
		c.t.Logf("fault rules at the end:\n%s", c.lab.Rules())
		for _, id := range c.ids() {
			c.t.Logf("broker %d log tail (%s):\n%s", id, c.logPath(id), c.brokers[id].Tail(80))
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

// newClient is a kgo client in the client host, seeded with every broker
// and closed when the test ends.
func (c *netCluster) newClient(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(c.addrs()...),
		kgo.Dialer(c.client.DialContext),
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

func (c *netCluster) admin() *kadm.Client { return kadm.NewClient(c.newClient()) }

// brokerClient sends requests to broker id only.
func (c *netCluster) brokerClient(id int32) *kgo.Broker {
	c.mu.Lock()
	cl := c.clients[id]
	c.mu.Unlock()
	if cl == nil {
		cl = c.newClient(kgo.SeedBrokers(c.brokers[id].Addr()))
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

func (c *netCluster) brokerMetadata(ctx context.Context, id int32, topics ...string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	return req.RequestWith(ctx, c.brokerClient(id))
}

// attemptTimeout bounds one call of a poll's condition.
const attemptTimeout = 3 * time.Second

// poll calls f every 50 ms until it returns nil, ctx ends or timeout
// passes; the error then is f's last one.
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

// createTopic creates topic and waits until every partition has a leader and
// a full ISR on every broker.
func (c *netCluster) createTopic(ctx context.Context, topic string, partitions int32, rf int16) error {
	resp, err := c.admin().CreateTopic(ctx, partitions, rf, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return poll(ctx, time.Minute, func(ctx context.Context) error { return c.fullISR(ctx, topic, int(partitions)) })
}

// fullISR is nil when every broker's own metadata shows topic with want
// partitions, each with a leader and ISR == replicas.
func (c *netCluster) fullISR(ctx context.Context, topic string, want int) error {
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

// zkSession is the test's own ZooKeeper session, from the client host.
func (c *netCluster) zkSession() *zk.Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.zkConn == nil {
		conn, _, err := zk.Connect(strings.Split(c.zk.Connect(), ","), 4*time.Second,
			zk.WithDialer(c.client.Dial), zk.WithLogInfo(false), zk.WithLogger(quiet{}))
		if err != nil {
			c.t.Fatal(err)
		}
		c.zkConn = conn
	}
	return c.zkConn
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// zkState is what ZooKeeper says about the cluster's control plane: any
// change of it means a broker lost its session or the controller moved.
type zkState struct {
	controller      int32
	controllerEpoch int64
	brokerEpochs    map[int32]int64 // the czxid of /brokers/ids/N
	leaderEpochs    map[string]int  // topic-partition -> leader epoch
}

func (s zkState) String() string {
	return fmt.Sprintf("controller %d (epoch %d), broker epochs %v, leader epochs %v", s.controller, s.controllerEpoch, s.brokerEpochs, s.leaderEpochs)
}

func (s zkState) equal(o zkState) bool {
	if s.controller != o.controller || s.controllerEpoch != o.controllerEpoch || len(s.brokerEpochs) != len(o.brokerEpochs) || len(s.leaderEpochs) != len(o.leaderEpochs) {
		return false
	}
	for k, v := range s.brokerEpochs {
		if o.brokerEpochs[k] != v {
			return false
		}
	}
	for k, v := range s.leaderEpochs {
		if o.leaderEpochs[k] != v {
			return false
		}
	}
	return true
}

// readRegistrations reads the stat of every broker's /brokers/ids/N.
func (c *netCluster) readRegistrations(conn *zk.Conn) (map[int32]*zk.Stat, error) {
	out := map[int32]*zk.Stat{}
	for _, id := range c.ids() {
		_, stat, err := conn.Get(fmt.Sprintf("%s/brokers/ids/%d", chroot, id))
		if err != nil {
			return nil, fmt.Errorf("broker %d registration: %w", id, err)
		}
		out[id] = stat
	}
	return out, nil
}

// readController reads /controller: the controller's broker id and the
// session that owns the znode.
func readController(conn *zk.Conn) (id int32, owner int64, err error) {
	data, stat, err := conn.Get(chroot + "/controller")
	if err != nil {
		return 0, 0, fmt.Errorf("/controller: %w", err)
	}
	var ctl struct {
		BrokerID int32 `json:"brokerid"`
	}
	if err := json.Unmarshal(data, &ctl); err != nil {
		return 0, 0, fmt.Errorf("/controller: %w", err)
	}
	return ctl.BrokerID, stat.EphemeralOwner, nil
}

// readZkState reads the control plane of topics from ZooKeeper.
func (c *netCluster) readZkState(ctx context.Context, topics map[string]int32) (zkState, error) {
	conn := c.zkSession()
	st := zkState{brokerEpochs: map[int32]int64{}, leaderEpochs: map[string]int{}}
	type result struct {
		st  zkState
		err error
	}
	ch := make(chan result, 1)
	go func() {
		id, _, err := readController(conn)
		if err != nil {
			ch <- result{err: err}
			return
		}
		st.controller = id
		data, _, err := conn.Get(chroot + "/controller_epoch")
		if err != nil {
			ch <- result{err: fmt.Errorf("/controller_epoch: %w", err)}
			return
		}
		if st.controllerEpoch, err = strconv.ParseInt(string(data), 10, 64); err != nil {
			ch <- result{err: err}
			return
		}
		regs, err := c.readRegistrations(conn)
		if err != nil {
			ch <- result{err: err}
			return
		}
		for id, stat := range regs {
			st.brokerEpochs[id] = stat.Czxid
		}
		for topic, n := range topics {
			for p := range n {
				data, _, err := conn.Get(fmt.Sprintf("%s/brokers/topics/%s/partitions/%d/state", chroot, topic, p))
				if err != nil {
					ch <- result{err: fmt.Errorf("%s-%d state: %w", topic, p, err)}
					return
				}
				var ps struct {
					LeaderEpoch int `json:"leader_epoch"`
				}
				if err := json.Unmarshal(data, &ps); err != nil {
					ch <- result{err: err}
					return
				}
				st.leaderEpochs[fmt.Sprintf("%s-%d", topic, p)] = ps.LeaderEpoch
			}
		}
		ch <- result{st: st}
	}()
	select {
	case r := <-ch:
		return r.st, r.err
	case <-ctx.Done():
		return zkState{}, ctx.Err()
	}
}
