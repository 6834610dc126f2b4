package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/broker/coord/embedded"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// These tests drive the controller's event handling as a cluster would: brokers
// register and die in an embedded coordination store, operators write admin
// znodes, and a recorder stands in for the brokers, keeping every request the
// controller sends. What the controller decided is read back from the store.

// recorder keeps the requests sent to each broker.
type recorder struct {
	mu      sync.Mutex
	sent    map[int32][]kmsg.Request
	stopped map[int32]int
}

type recordingPeer struct {
	r       *recorder
	id      int32
	address string
}

func (p *recordingPeer) addr() string { return p.address }

func (p *recordingPeer) send(req kmsg.Request) {
	p.r.mu.Lock()
	defer p.r.mu.Unlock()
	p.r.sent[p.id] = append(p.r.sent[p.id], req)
}

func (p *recordingPeer) drained() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

func (p *recordingPeer) stop() {
	p.r.mu.Lock()
	defer p.r.mu.Unlock()
	p.r.stopped[p.id]++
}

// leaderAndIsr returns the partition states broker id was told, oldest first.
func (r *recorder) leaderAndIsr(id int32) []kmsg.LeaderAndISRRequestTopicPartition {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []kmsg.LeaderAndISRRequestTopicPartition
	for _, req := range r.sent[id] {
		if l, ok := req.(*kmsg.LeaderAndISRRequest); ok {
			for _, ts := range l.TopicStates {
				out = append(out, ts.PartitionStates...)
			}
		}
	}
	return out
}

// stopReplica returns the partitions broker id was told to stop, with delete.
func (r *recorder) stopReplica(id int32) (out []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, req := range r.sent[id] {
		if s, ok := req.(*kmsg.StopReplicaRequest); ok {
			for _, t := range s.Topics {
				for _, p := range t.PartitionStates {
					d := ""
					if p.Delete {
						d = " delete"
					}
					out = append(out, TP{t.Topic, p.Partition}.String()+d)
				}
			}
		}
	}
	return out
}

// lastMetadata returns what broker id knows from the UpdateMetadata it was
// sent: the newest one's brokers and epochs, and every partition as last
// described (deleted ones dropped), as a full request.
func (r *recorder) lastMetadata(id int32) *kmsg.UpdateMetadataRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	var view *kmsg.UpdateMetadataRequest
	for _, req := range r.sent[id] {
		if u, ok := req.(*kmsg.UpdateMetadataRequest); ok {
			if view == nil {
				view = u
				continue
			}
			view = mergeMetadata(view, u)
		}
	}
	if view == nil {
		return nil
	}
	out := *view
	out.TopicStates = nil
	for _, t := range view.TopicStates {
		for _, p := range t.PartitionStates {
			if p.Leader == leaderDuringDelete {
				continue
			}
			if n := len(out.TopicStates); n == 0 || out.TopicStates[n-1].Topic != t.Topic {
				ts := t
				ts.PartitionStates = nil
				out.TopicStates = append(out.TopicStates, ts)
			}
			ts := &out.TopicStates[len(out.TopicStates)-1]
			ts.PartitionStates = append(ts.PartitionStates, p)
		}
	}
	sortMetadata(&out)
	return &out
}

// sortMetadata orders topics and partitions, merging repeated topics.
func sortMetadata(u *kmsg.UpdateMetadataRequest) {
	by := map[string]*kmsg.UpdateMetadataRequestTopicState{}
	var names []string
	for _, t := range u.TopicStates {
		if cur, ok := by[t.Topic]; ok {
			cur.PartitionStates = append(cur.PartitionStates, t.PartitionStates...)
			continue
		}
		tc := t
		by[t.Topic] = &tc
		names = append(names, t.Topic)
	}
	slices.Sort(names)
	u.TopicStates = nil
	for _, n := range names {
		t := by[n]
		slices.SortFunc(t.PartitionStates, func(a, b kmsg.UpdateMetadataRequestTopicPartition) int { return int(a.Partition) - int(b.Partition) })
		u.TopicStates = append(u.TopicStates, *t)
	}
}

func (r *recorder) stops(id int32) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopped[id]
}

// logs keeps the controller's log messages.
type logs struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logs) Enabled(context.Context, slog.Level) bool { return true }
func (l *logs) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}
func (l *logs) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logs) WithGroup(string) slog.Handler      { return l }

func (l *logs) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if strings.Contains(m, msg) {
			n++
		}
	}
	return n
}

// cluster is a controller over an embedded store with recorded brokers.
type cluster struct {
	t        *testing.T
	ctx      context.Context
	srv      *embedded.Server
	admin    coord.Store
	sessions map[int32]coord.Store
	rec      *recorder
	logs     *logs
	c        *Controller
}

// newCluster registers brokers, writes topics (name: partition: replicas) and
// starts a controller with cfg.
func newCluster(t *testing.T, live []int32, topics map[string]map[int32][]int32, cfg Config) *cluster {
	t.Helper()
	return newClusterWith(t, live, topics, cfg, nil)
}

// newClusterWith is newCluster with the controller's store wrapped by wrap.
func newClusterWith(t *testing.T, live []int32, topics map[string]map[int32][]int32, cfg Config, wrap func(coord.Store) coord.Store) *cluster {
	t.Helper()
	srv, err := embedded.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cl := &cluster{t: t, ctx: ctx, srv: srv, sessions: map[int32]coord.Store{},
		rec: &recorder{sent: map[int32][]kmsg.Request{}, stopped: map[int32]int{}}, logs: &logs{}}
	if cl.admin, err = srv.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.admin.CreateAll(ctx, zkdata.BrokerIDsPath, nil, coord.Persistent); err != nil {
		t.Fatal(err)
	}
	for _, id := range live {
		cl.startBroker(id)
	}
	for name, parts := range topics {
		cl.createTopic(name, parts)
	}
	store, err := srv.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	epoch, version, err := bumpEpoch(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = slog.New(cl.logs)
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = time.Second
	}
	if wrap != nil {
		store = wrap(store)
	}
	cl.c = newController(ctx, cfg, store, epoch, version)
	cl.c.connect = func(id int32, addr string) peer { return &recordingPeer{r: cl.rec, id: id, address: addr} }
	done := make(chan struct{})
	go func() {
		defer close(done)
		cl.c.run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		srv.Close()
	})
	cl.waitFor("the controller's first view", func() bool { return cl.c.Snapshot().Epoch == epoch })
	return cl
}

func (cl *cluster) createTopic(name string, parts map[int32][]int32) {
	cl.t.Helper()
	a := zkdata.TopicAssignment{Partitions: parts}
	if _, err := cl.admin.CreateAll(cl.ctx, zkdata.TopicPath(name), zkdata.EncodeTopicAssignment(a), coord.Persistent); err != nil {
		cl.t.Fatal(err)
	}
}

// startBroker registers broker id in a session of its own.
func (cl *cluster) startBroker(id int32) {
	cl.t.Helper()
	s, err := cl.srv.Connect(cl.ctx)
	if err != nil {
		cl.t.Fatal(err)
	}
	info := zkdata.BrokerInfo{ID: id, Host: "127.0.0.1", Port: 9000 + id}
	if _, err := s.Create(cl.ctx, zkdata.BrokerPath(id), zkdata.EncodeBrokerInfo(info), coord.Ephemeral); err != nil {
		cl.t.Fatal(err)
	}
	cl.sessions[id] = s
}

// killBroker expires broker id's session, as its death would.
func (cl *cluster) killBroker(id int32) {
	cl.t.Helper()
	if err := cl.srv.Expire(cl.sessions[id].SessionID()); err != nil {
		cl.t.Fatal(err)
	}
	delete(cl.sessions, id)
}

// brokerEpoch is broker id's registration czxid, the epoch its requests carry.
func (cl *cluster) brokerEpoch(id int32) int64 {
	cl.t.Helper()
	_, st, err := cl.admin.Get(cl.ctx, zkdata.BrokerPath(id))
	if err != nil {
		cl.t.Fatal(err)
	}
	return st.Czxid
}

// state reads a partition's state znode.
func (cl *cluster) state(topic string, p int32) zkdata.LeaderIsr {
	cl.t.Helper()
	data, st, err := cl.admin.Get(cl.ctx, zkdata.PartitionStatePath(topic, p))
	if err != nil {
		cl.t.Fatalf("%s-%d state: %v", topic, p, err)
	}
	li, err := zkdata.DecodeLeaderIsr(data, st.Version)
	if err != nil {
		cl.t.Fatal(err)
	}
	return li
}

// leaderExpandsIsr writes the ISR a partition's leader would after a follower
// caught up, with the notification that tells the controller.
func (cl *cluster) leaderExpandsIsr(topic string, p int32, isr []int32) {
	cl.t.Helper()
	li := cl.state(topic, p)
	li.ISR = isr
	written, err := cl.admin.Set(cl.ctx, zkdata.PartitionStatePath(topic, p), zkdata.EncodeLeaderIsr(li), li.ZkVersion)
	if err != nil {
		cl.t.Fatal(err)
	}
	note := zkdata.EncodeIsrChange([]zkdata.TopicPartition{{Topic: topic, Partition: p}})
	if _, err := cl.admin.Create(cl.ctx, zkdata.IsrChangePath(), note, coord.PersistentSequential); err != nil {
		cl.t.Fatal(err)
	}
	cl.waitFor("the controller to see the ISR change", func() bool {
		return cl.c.Snapshot().States[TP{topic, p}].ZkVersion >= written.Version
	})
}

func (cl *cluster) waitFor(what string, cond func() bool) {
	cl.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			cl.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitState waits until the controller's view of a partition has leader and
// ISR, and checks the store holds the same.
func (cl *cluster) waitState(topic string, p int32, leader int32, isr []int32) zkdata.LeaderIsr {
	cl.t.Helper()
	tp := TP{topic, p}
	cl.waitFor(fmt.Sprintf("%s to have leader %d and ISR %v", tp, leader, isr), func() bool {
		st := cl.c.Snapshot().States[tp]
		return st.Leader == leader && slices.Equal(st.ISR, isr)
	})
	li := cl.state(topic, p)
	if li.Leader != leader || !slices.Equal(li.ISR, isr) {
		cl.t.Fatalf("%s in the store: leader %d ISR %v, want %d %v", tp, li.Leader, li.ISR, leader, isr)
	}
	return li
}

// told reports whether broker id was sent a LeaderAndIsr for the partition
// with this leader and leader epoch.
func (cl *cluster) told(id int32, topic string, p, leader, epoch int32) bool {
	for _, s := range cl.rec.leaderAndIsr(id) {
		if s.Topic == topic && s.Partition == p && s.Leader == leader && s.LeaderEpoch == epoch {
			return true
		}
	}
	return false
}

func threeBrokers() map[string]map[int32][]int32 {
	return map[string]map[int32][]int32{"a": {0: {1, 2, 3}, 1: {2, 3, 1}}}
}

func TestFailoverWritesStatesAndTellsEveryBroker(t *testing.T) {
	cl := newCluster(t, ids(1, 2, 3), threeBrokers(), Config{BrokerID: 1})
	a0 := cl.waitState("a", 0, 1, ids(1, 2, 3))
	a1 := cl.waitState("a", 1, 2, ids(2, 3, 1))
	if a0.LeaderEpoch != 0 || a0.ControllerEpoch != cl.c.Epoch() {
		t.Fatalf("a-0 state %+v: want leader epoch 0 and controller epoch %d", a0, cl.c.Epoch())
	}
	for _, id := range ids(1, 2, 3) {
		if !cl.told(id, "a", 0, 1, 0) || !cl.told(id, "a", 1, 2, a1.LeaderEpoch) {
			t.Errorf("broker %d was not told both partitions: %+v", id, cl.rec.leaderAndIsr(id))
		}
		cl.waitFor("metadata for every broker", func() bool {
			md := cl.rec.lastMetadata(id)
			return md != nil && len(md.LiveBrokers) == 3 && len(md.TopicStates) == 1 && len(md.TopicStates[0].PartitionStates) == 2
		})
		if md := cl.rec.lastMetadata(id); md.BrokerEpoch != cl.brokerEpoch(id) || md.ControllerEpoch != cl.c.Epoch() {
			t.Errorf("broker %d metadata carries broker epoch %d and controller epoch %d", id, md.BrokerEpoch, md.ControllerEpoch)
		}
	}
}

func TestBrokerFailureMovesLeadershipAndShrinksIsr(t *testing.T) {
	cl := newCluster(t, ids(1, 2, 3), threeBrokers(), Config{BrokerID: 2})
	cl.waitState("a", 0, 1, ids(1, 2, 3))
	cl.killBroker(1)
	a0 := cl.waitState("a", 0, 2, ids(2, 3))
	a1 := cl.waitState("a", 1, 2, ids(2, 3))
	if a0.LeaderEpoch != 1 || a1.LeaderEpoch != 1 {
		t.Fatalf("leader epochs after the failure: a-0 %d, a-1 %d, want 1 and 1", a0.LeaderEpoch, a1.LeaderEpoch)
	}
	for _, id := range ids(2, 3) {
		if !cl.told(id, "a", 0, 2, 1) || !cl.told(id, "a", 1, 2, 1) {
			t.Errorf("broker %d was not told the new states: %+v", id, cl.rec.leaderAndIsr(id))
		}
	}
	if cl.rec.stops(1) != 1 {
		t.Errorf("the sender to the dead broker was stopped %d times, want 1", cl.rec.stops(1))
	}
	cl.waitFor("metadata naming broker 1 offline", func() bool {
		md := cl.rec.lastMetadata(2)
		return md != nil && len(md.LiveBrokers) == 2 && slices.Equal(md.TopicStates[0].PartitionStates[0].OfflineReplicas, ids(1))
	})

	// Broker 1 returns: it is told its partitions, with its new broker epoch, and
	// leads nothing until it is back in sync.
	cl.startBroker(1)
	cl.waitFor("broker 1 to be told its partitions", func() bool { return cl.told(1, "a", 0, 2, 1) && cl.told(1, "a", 1, 2, 1) })
	cl.rec.mu.Lock()
	var epoch int64 = -1
	for _, req := range cl.rec.sent[1] {
		if l, ok := req.(*kmsg.LeaderAndISRRequest); ok {
			epoch = l.BrokerEpoch
		}
	}
	cl.rec.mu.Unlock()
	if want := cl.brokerEpoch(1); epoch != want {
		t.Errorf("LeaderAndIsr to the returned broker carries broker epoch %d, want its new registration's %d", epoch, want)
	}
	if got := cl.state("a", 0); got.Leader != 2 {
		t.Errorf("a-0 moved to %d when broker 1 returned out of sync", got.Leader)
	}
}

func TestOfflinePartitionWaitsForAnInSyncReplica(t *testing.T) {
	cl := newCluster(t, ids(1, 2), map[string]map[int32][]int32{"b": {0: {1, 2}}}, Config{BrokerID: 1})
	cl.waitState("b", 0, 1, ids(1, 2))
	cl.killBroker(2)
	cl.waitState("b", 0, 1, ids(1))
	cl.killBroker(1)
	off := cl.waitState("b", 0, -1, ids(1))
	if cl.logs.count("partition offline") == 0 {
		t.Error("going offline was not logged")
	}
	// The out-of-sync replica returns: unclean election is off, it stays offline.
	cl.startBroker(2)
	cl.waitFor("broker 2 to be told the offline state", func() bool { return cl.told(2, "b", 0, -1, off.LeaderEpoch) })
	if got := cl.state("b", 0); got.Leader != -1 {
		t.Fatalf("out-of-sync broker 2 was elected: %+v", got)
	}
	// The last in-sync replica returns and leads.
	cl.startBroker(1)
	li := cl.waitState("b", 0, 1, ids(1))
	if li.LeaderEpoch != off.LeaderEpoch+1 {
		t.Fatalf("leader epoch %d, want %d", li.LeaderEpoch, off.LeaderEpoch+1)
	}
}

func TestUncleanElection(t *testing.T) {
	topics := map[string]map[int32][]int32{"u": {0: {1, 2}}, "c": {0: {1, 2}}}
	cfg := Config{BrokerID: 1, Unclean: func(topic string) bool { return topic == "u" }}
	cl := newCluster(t, ids(1, 2), topics, cfg)
	cl.waitState("u", 0, 1, ids(1, 2))
	cl.killBroker(2)
	cl.waitState("u", 0, 1, ids(1))
	cl.waitState("c", 0, 1, ids(1))
	cl.killBroker(1)
	cl.waitState("u", 0, -1, ids(1))
	cl.waitState("c", 0, -1, ids(1))
	cl.startBroker(2)
	// The topic allowing it elects the out-of-sync replica by itself.
	cl.waitState("u", 0, 2, ids(2))
	if cl.logs.count("unclean leader election") == 0 {
		t.Error("the unclean election was not logged")
	}
	if got := cl.state("c", 0); got.Leader != -1 {
		t.Fatalf("topic c elected uncleanly without being allowed to: %+v", got)
	}
	// An operator forces it for the other.
	res, err := cl.c.ElectLeaders(cl.ctx, Unclean, []TP{{"c", 0}, {"u", 0}, {"nope", 0}})
	if err != nil {
		t.Fatal(err)
	}
	if res[TP{"c", 0}] != nil || !errors.Is(res[TP{"u", 0}], kerr.ElectionNotNeeded) || !errors.Is(res[TP{"nope", 0}], kerr.UnknownTopicOrPartition) {
		t.Fatalf("unclean ElectLeaders results: %v", res)
	}
	cl.waitState("c", 0, 2, ids(2))
}

func TestPreferredElection(t *testing.T) {
	cl := newCluster(t, ids(1, 2, 3), threeBrokers(), Config{BrokerID: 1})
	cl.waitState("a", 0, 1, ids(1, 2, 3))
	cl.killBroker(1)
	cl.waitState("a", 0, 2, ids(2, 3))
	cl.startBroker(1)
	cl.waitFor("broker 1 registered", func() bool { return slices.Contains(cl.c.Snapshot().Brokers, 1) })
	tp := TP{"a", 0}
	res, err := cl.c.ElectLeaders(cl.ctx, Preferred, []TP{tp})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res[tp], kerr.PreferredLeaderNotAvailable) {
		t.Fatalf("preferred election with the preferred replica out of sync: %v", res[tp])
	}
	cl.leaderExpandsIsr("a", 0, ids(2, 3, 1))
	if res, err = cl.c.ElectLeaders(cl.ctx, Preferred, []TP{tp}); err != nil || res[tp] != nil {
		t.Fatalf("preferred election: %v %v", res, err)
	}
	li := cl.waitState("a", 0, 1, ids(2, 3, 1))
	for _, id := range ids(1, 2, 3) {
		if !cl.told(id, "a", 0, 1, li.LeaderEpoch) {
			t.Errorf("broker %d was not told the preferred leader", id)
		}
	}
	if res, _ = cl.c.ElectLeaders(cl.ctx, Preferred, []TP{tp}); !errors.Is(res[tp], kerr.ElectionNotNeeded) {
		t.Fatalf("second preferred election: %v", res[tp])
	}
}

func TestPreferredElectionThroughTheAdminZnode(t *testing.T) {
	cl := newCluster(t, ids(1, 2, 3), threeBrokers(), Config{BrokerID: 1})
	cl.killBroker(1)
	cl.waitState("a", 0, 2, ids(2, 3))
	cl.startBroker(1)
	cl.waitFor("broker 1 registered", func() bool { return slices.Contains(cl.c.Snapshot().Brokers, 1) })
	cl.leaderExpandsIsr("a", 0, ids(2, 3, 1))
	req := zkdata.EncodePreferredReplicaElection([]zkdata.TopicPartition{{Topic: "a", Partition: 0}})
	if _, err := cl.admin.CreateAll(cl.ctx, zkdata.PreferredReplicaElectionPath, req, coord.Persistent); err != nil {
		t.Fatal(err)
	}
	cl.waitState("a", 0, 1, ids(2, 3, 1))
	cl.waitFor("the request znode to be removed", func() bool {
		ok, _, err := cl.admin.Exists(cl.ctx, zkdata.PreferredReplicaElectionPath)
		return err == nil && !ok
	})
}

func TestAutoRebalanceTick(t *testing.T) {
	cfg := Config{BrokerID: 1, AutoRebalance: true, ImbalancePercentage: 10, ImbalanceCheckInterval: 10 * time.Millisecond}
	cl := newCluster(t, ids(1, 2, 3), threeBrokers(), cfg)
	cl.killBroker(1)
	cl.waitState("a", 0, 2, ids(2, 3))
	cl.startBroker(1)
	cl.waitFor("broker 1 registered", func() bool { return slices.Contains(cl.c.Snapshot().Brokers, 1) })
	// Broker 1 prefers a-0 and is out of its ISR: nothing to do yet.
	cl.leaderExpandsIsr("a", 0, ids(2, 3, 1))
	cl.waitState("a", 0, 1, ids(2, 3, 1))
	if cl.logs.count("leader imbalance above threshold") == 0 {
		t.Error("the rebalance was not logged")
	}
}

func TestAutoRebalancePanicIsContained(t *testing.T) {
	cfg := Config{BrokerID: 1, AutoRebalance: true, ImbalancePercentage: 10, ImbalanceCheckInterval: 10 * time.Millisecond}
	cl := newCluster(t, ids(1, 2, 3), threeBrokers(), cfg)
	// A partition without state makes the rebalance dereference nil: the tick
	// must fail like any other event, logged, and the controller keep going.
	bad := TP{"broken", 0}
	if err := cl.c.call(cl.ctx, func() { cl.c.states[bad] = nil }); err != nil {
		t.Fatal(err)
	}
	cl.waitFor("the rebalance to fail", func() bool { return cl.logs.count("controller event failed") > 0 })
	if err := cl.c.call(cl.ctx, func() { delete(cl.c.states, bad) }); err != nil {
		t.Fatal(err)
	}
	cl.killBroker(1)
	cl.waitState("a", 0, 2, ids(2, 3))
}

func TestControlledShutdown(t *testing.T) {
	topics := threeBrokers()
	topics["single"] = map[int32][]int32{0: {1}}
	cl := newCluster(t, ids(1, 2, 3), topics, Config{BrokerID: 2})
	cl.waitState("a", 0, 1, ids(1, 2, 3))
	if _, err := cl.c.ControlledShutdown(cl.ctx, 9, -1); !errors.Is(err, kerr.BrokerNotAvailable) {
		t.Fatalf("unknown broker: %v", err)
	}
	epoch := cl.brokerEpoch(1)
	if _, err := cl.c.ControlledShutdown(cl.ctx, 1, epoch-1); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Fatalf("stale broker epoch: %v", err)
	}
	remaining, err := cl.c.ControlledShutdown(cl.ctx, 1, epoch)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(remaining, []TP{{"single", 0}}) {
		t.Fatalf("still led by the stopping broker: %v, want only single-0", remaining)
	}
	cl.waitState("a", 0, 2, ids(2, 3))
	cl.waitState("a", 1, 2, ids(2, 3))
	stops := cl.rec.stopReplica(1)
	slices.Sort(stops)
	if !slices.Equal(stops, []string{"a-0", "a-1"}) {
		t.Fatalf("StopReplica to the stopping broker: %v, want a-0 and a-1 without delete", stops)
	}
	if !cl.told(2, "a", 0, 2, 1) || !cl.told(3, "a", 0, 2, 1) || cl.told(1, "a", 0, 2, 1) {
		t.Fatal("the new leadership of a-0 must go to the other replicas only")
	}
	// The moved leadership goes out alone, before the ISR clean-up of a-1
	// (led by 2, followed by the stopping broker).
	cl.rec.mu.Lock()
	for _, req := range cl.rec.sent[3] {
		l, ok := req.(*kmsg.LeaderAndISRRequest)
		if !ok {
			continue
		}
		var moved, cleaned bool
		for _, ts := range l.TopicStates {
			for _, p := range ts.PartitionStates {
				moved = moved || (p.Partition == 0 && p.Leader == 2 && p.LeaderEpoch == 1)
				cleaned = cleaned || (p.Partition == 1 && p.LeaderEpoch == 1)
			}
		}
		if moved && cleaned {
			t.Error("a-0's new leader and a-1's ISR clean-up in one LeaderAndIsr; the leaderships must go first")
		}
	}
	cl.rec.mu.Unlock()
	// Broker 2 dies: the remaining in-sync replica leads; the stopping broker,
	// still registered, is not taken back.
	cl.killBroker(2)
	cl.waitState("a", 0, 3, ids(3))
}

func TestNewTopicAndTopicDeletion(t *testing.T) {
	cl := newCluster(t, ids(1, 2, 3), nil, Config{BrokerID: 1})
	cl.createTopic("n", map[int32][]int32{0: {3, 1}, 1: {2, 3}})
	cl.waitState("n", 0, 3, ids(3, 1))
	cl.waitState("n", 1, 2, ids(2, 3))
	var isNew bool
	for _, s := range cl.rec.leaderAndIsr(3) {
		isNew = isNew || (s.Topic == "n" && s.IsNew)
	}
	if !isNew {
		t.Error("LeaderAndIsr for a new topic must say IsNew")
	}

	// Deletion waits for every replica to be live.
	cl.killBroker(1)
	cl.waitState("n", 0, 3, ids(3))
	if _, err := cl.admin.CreateAll(cl.ctx, zkdata.DeleteTopicPath("n"), nil, coord.Persistent); err != nil {
		t.Fatal(err)
	}
	cl.waitFor("the deletion to wait", func() bool { return cl.logs.count("topic deletion waits") > 0 })
	if ok, _, _ := cl.admin.Exists(cl.ctx, zkdata.TopicPath("n")); !ok {
		t.Fatal("the topic was deleted with a replica offline")
	}
	cl.startBroker(1)
	cl.waitFor("the topic to be deleted", func() bool {
		ok, _, err := cl.admin.Exists(cl.ctx, zkdata.TopicPath("n"))
		return err == nil && !ok && len(cl.c.Snapshot().States) == 0
	})
	for id, want := range map[int32][]string{1: {"n-0 delete"}, 2: {"n-1 delete"}, 3: {"n-0 delete", "n-1 delete"}} {
		got := cl.rec.stopReplica(id)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("StopReplica to broker %d: %v, want %v", id, got, want)
		}
	}
	if ok, _, _ := cl.admin.Exists(cl.ctx, zkdata.DeleteTopicPath("n")); ok {
		t.Error("the deletion request znode is left behind")
	}
}

func TestReassignment(t *testing.T) {
	cl := newCluster(t, ids(1, 2, 3, 4), threeBrokers(), Config{BrokerID: 1})
	cl.waitState("a", 0, 1, ids(1, 2, 3))
	tp := TP{"a", 0}
	res, err := cl.c.AlterReassignments(cl.ctx, map[TP][]int32{tp: ids(4, 2, 3), {"a", 1}: ids(9), {"x", 0}: ids(1)})
	if err != nil {
		t.Fatal(err)
	}
	if res[tp] != nil || !errors.Is(res[TP{"a", 1}], kerr.InvalidReplicaAssignment) || !errors.Is(res[TP{"x", 0}], kerr.UnknownTopicOrPartition) {
		t.Fatalf("AlterReassignments results: %v", res)
	}
	list, err := cl.c.ListReassignments(cl.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Reassignment{Replicas: ids(4, 2, 3, 1), Adding: ids(4), Removing: ids(1)}
	if got := list[tp]; len(list) != 1 || !slices.Equal(got.Replicas, want.Replicas) || !slices.Equal(got.Adding, want.Adding) || !slices.Equal(got.Removing, want.Removing) {
		t.Fatalf("ListReassignments = %+v, want only a-0 %+v", list, want)
	}
	li := cl.waitState("a", 0, 1, ids(1, 2, 3))
	if !cl.told(4, "a", 0, 1, li.LeaderEpoch) {
		t.Fatal("the new replica was not told to follow")
	}
	// Broker 4 catches up: the reassignment completes, the leader moves to the
	// first replica of the target set, and the removed replica is stopped and
	// deleted.
	cl.leaderExpandsIsr("a", 0, ids(1, 2, 3, 4))
	cl.waitState("a", 0, 4, ids(2, 3, 4))
	cl.waitFor("the assignment to shrink to the target", func() bool {
		data, _, err := cl.admin.Get(cl.ctx, zkdata.TopicPath("a"))
		if err != nil {
			return false
		}
		a, err := zkdata.DecodeTopicAssignment(data)
		return err == nil && slices.Equal(a.Partitions[0], ids(4, 2, 3)) && len(a.Adding) == 0 && len(a.Removing) == 0
	})
	if got := cl.rec.stopReplica(1); !slices.Contains(got, "a-0 delete") {
		t.Fatalf("StopReplica to the removed replica: %v", got)
	}
	if list, _ = cl.c.ListReassignments(cl.ctx, nil); len(list) != 0 {
		t.Fatalf("reassignments left: %v", list)
	}
}

func TestFencedControllerWritesNothing(t *testing.T) {
	cl := newCluster(t, ids(1, 2, 3), threeBrokers(), Config{BrokerID: 1})
	before := cl.waitState("a", 0, 1, ids(1, 2, 3))
	// Another controller takes over: it bumps the epoch znode.
	if _, _, err := bumpEpoch(cl.ctx, cl.admin); err != nil {
		t.Fatal(err)
	}
	cl.killBroker(1)
	cl.waitFor("the fenced write to fail", func() bool { return cl.logs.count("another controller took over") > 0 })
	if got := cl.state("a", 0); got.Leader != before.Leader || got.LeaderEpoch != before.LeaderEpoch || got.ZkVersion != before.ZkVersion {
		t.Fatalf("a fenced controller changed a-0: %+v, was %+v", got, before)
	}
}
