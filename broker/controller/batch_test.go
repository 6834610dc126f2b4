package controller

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// countingStore counts the controller's Multis and can run a hook before one.
type countingStore struct {
	coord.Store
	mu     sync.Mutex
	multis int
	// inFlight and maxInFlight count the Multis sent and not yet answered.
	inFlight, maxInFlight int
	before                func(n int)
	// lose makes the next Multi report a lost connection after it was applied.
	lose bool
}

func (s *countingStore) Multi(ctx context.Context, ops ...coord.Op) error {
	s.mu.Lock()
	s.multis++
	n, hook, lose := s.multis, s.before, s.lose
	s.lose = false
	s.inFlight++
	s.maxInFlight = max(s.maxInFlight, s.inFlight)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()
	if hook != nil {
		hook(n)
	}
	err := s.Store.Multi(ctx, ops...)
	if err == nil && lose {
		return coord.ErrConnectionLoss
	}
	return err
}

func (s *countingStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.multis
}

// TestBatchedStateWrites: a topic of 5,000 partitions is given its states in
// a handful of Multis, not 5,000, and the election after a broker's death is
// batched too; a leader's ISR write racing with one of those Multis makes
// the controller re-read and write the whole batch again, so no partition
// is left behind.
func TestBatchedStateWrites(t *testing.T) {
	const n = 5000
	var cs *countingStore
	cl := newClusterWith(t, []int32{1, 2, 3}, nil, Config{BrokerID: 1}, func(s coord.Store) coord.Store {
		cs = &countingStore{Store: s}
		return cs
	})
	parts := map[int32][]int32{}
	for p := range int32(n) {
		parts[p] = []int32{p%3 + 1, (p+1)%3 + 1, (p+2)%3 + 1}
	}
	before := cs.count()
	cl.createTopic("big", parts)
	cl.waitFor("every partition's state", func() bool {
		st := cl.c.Snapshot().States
		for p := range int32(n) {
			if s, ok := st[TP{"big", p}]; !ok || !s.HasState {
				return false
			}
		}
		return true
	})
	created := cs.count() - before
	// About 260 bytes of ops per partition: 1.3 MB in parts of 64 KiB.
	if created > 25 {
		t.Fatalf("%d Multis to create %d partition states", created, n)
	}
	// They are sent together, not one after the other's answer, so that
	// the store commits them with shared fsyncs.
	cs.mu.Lock()
	most := cs.maxInFlight
	cs.mu.Unlock()
	if most < 2 {
		t.Fatalf("at most %d of the %d Multis in flight at once", most, created)
	}
	for _, p := range []int32{0, 1, 2, n - 1} {
		if li := cl.state("big", p); li.Leader != parts[p][0] || len(li.ISR) != 3 {
			t.Fatalf("partition %d: %+v", p, li)
		}
	}

	// The partitions broker 1 leads move; just before the first Multi, a
	// leader bumps the version of one of them.
	raced := int32(3 * 1000) // led by broker 1
	var once sync.Once
	cs.mu.Lock()
	cs.before = func(int) {
		once.Do(func() {
			li := cl.state("big", raced)
			if _, err := cl.admin.Set(cl.ctx, zkdata.PartitionStatePath("big", raced), zkdata.EncodeLeaderIsr(li), li.ZkVersion); err != nil {
				t.Error(err)
			}
		})
	}
	cs.mu.Unlock()
	before = cs.count()
	cl.killBroker(1)
	cl.waitFor("new leaders for broker 1's partitions", func() bool {
		st := cl.c.Snapshot().States
		for p := range int32(n) {
			s := st[TP{"big", p}]
			if s.Leader == 1 || len(s.ISR) != 2 {
				return false
			}
		}
		return true
	})
	for p := range int32(n) {
		if li := cl.state("big", p); li.Leader == 1 || li.Leader < 0 {
			t.Fatalf("partition %d still led by %d in the store", p, li.Leader)
		}
	}
	if cl.logs.count("lost a race") == 0 {
		t.Fatal("the racing ISR write did not make a Multi fail")
	}
	if li := cl.state("big", raced); li.Leader != 2 {
		t.Fatalf("raced partition: %+v", li)
	}
	if m := cs.count() - before; m > 40 {
		t.Fatalf("%d Multis to elect and shrink %d partitions", m, n)
	}
}

// A Multi applied by the store but reported as a lost connection (its outcome
// unknown to the controller) is read back: its partitions count as written,
// get their LeaderAndIsr, and none is left without a leader.
func TestStateWriteWithUnknownOutcome(t *testing.T) {
	const n = 600
	var cs *countingStore
	cl := newClusterWith(t, []int32{1, 2, 3}, nil, Config{BrokerID: 1}, func(s coord.Store) coord.Store {
		cs = &countingStore{Store: s}
		return cs
	})
	parts := map[int32][]int32{}
	for p := range int32(n) {
		parts[p] = []int32{p%3 + 1, (p+1)%3 + 1, (p+2)%3 + 1}
	}
	cs.mu.Lock()
	cs.lose = true
	cs.mu.Unlock()
	cl.createTopic("big", parts)
	cl.waitFor("every partition's state", func() bool {
		st := cl.c.Snapshot().States
		for p := range int32(n) {
			if s, ok := st[TP{"big", p}]; !ok || !s.HasState || s.Leader != parts[p][0] {
				return false
			}
		}
		return true
	})
	if cl.logs.count("reading back") == 0 {
		t.Fatal("no Multi was reported lost")
	}
	cl.waitFor("LeaderAndIsr for every partition", func() bool {
		seen := map[int32]bool{}
		for _, ps := range cl.rec.leaderAndIsr(1) {
			if ps.Topic == "big" {
				seen[ps.Partition] = true
			}
		}
		return len(seen) == n
	})
}

// rawMetadata returns every UpdateMetadata broker id was sent, oldest first.
func (r *recorder) rawMetadata(id int32) []*kmsg.UpdateMetadataRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*kmsg.UpdateMetadataRequest
	for _, req := range r.sent[id] {
		if u, ok := req.(*kmsg.UpdateMetadataRequest); ok {
			out = append(out, u)
		}
	}
	return out
}

func umPartitions(u *kmsg.UpdateMetadataRequest) map[TP]int32 {
	out := map[TP]int32{}
	for _, t := range u.TopicStates {
		for _, p := range t.PartitionStates {
			out[TP{t.Topic, p.Partition}] = p.Leader
		}
	}
	return out
}

// TestIncrementalUpdateMetadata: a broker's first UpdateMetadata is the full
// view; after that it is told only the partitions that changed (an ISR
// expansion: one partition), a deleted topic's partitions once with leader
// -2, and a broker that (re)registers gets the full view again.
func TestIncrementalUpdateMetadata(t *testing.T) {
	topics := map[string]map[int32][]int32{"t": {}, "u": {0: {1, 2}, 1: {2, 3}}}
	for p := range int32(30) {
		topics["t"][p] = []int32{p%3 + 1, (p+1)%3 + 1}
	}
	cl := newCluster(t, ids(1, 2, 3), topics, Config{BrokerID: 1})
	cl.waitFor("the full view on broker 2", func() bool {
		md := cl.rec.lastMetadata(2)
		return md != nil && len(umPartitions(md)) == 32
	})
	if first := cl.rec.rawMetadata(2)[0]; len(umPartitions(first)) != 32 {
		t.Fatalf("the first UpdateMetadata names %d partitions, want all 32", len(umPartitions(first)))
	}
	li := cl.state("t", 4)
	n := len(cl.rec.rawMetadata(2))
	cl.leaderExpandsIsr("t", 4, li.ISR[:1])
	cl.waitFor("an UpdateMetadata after the ISR change", func() bool { return len(cl.rec.rawMetadata(2)) > n })
	all := cl.rec.rawMetadata(2)
	if got := umPartitions(all[len(all)-1]); len(got) != 1 {
		t.Fatalf("the UpdateMetadata after one ISR change names %v", got)
	}
	if md := cl.rec.lastMetadata(2); len(umPartitions(md)) != 32 {
		t.Fatalf("broker 2's view has %d partitions, want 32", len(umPartitions(md)))
	}

	// Deleting u: its two partitions are marked deleted, once.
	n = len(cl.rec.rawMetadata(2))
	if _, err := cl.admin.CreateAll(cl.ctx, zkdata.DeleteTopicPath("u"), nil, coord.Persistent); err != nil {
		t.Fatal(err)
	}
	cl.waitFor("u dropped from broker 2's view", func() bool {
		md := cl.rec.lastMetadata(2)
		return md != nil && len(umPartitions(md)) == 30
	})
	deleted := 0
	for _, u := range cl.rec.rawMetadata(2)[n:] {
		for tp, leader := range umPartitions(u) {
			if tp.Topic == "u" && leader == leaderDuringDelete {
				deleted++
			} else if tp.Topic == "u" {
				t.Errorf("%v sent with leader %d while being deleted", tp, leader)
			}
		}
	}
	if deleted != 2 {
		t.Fatalf("%d deletion marks for u's 2 partitions", deleted)
	}

	// A broker that registers gets everything.
	cl.startBroker(4)
	cl.waitFor("the full view on broker 4", func() bool { return len(cl.rec.rawMetadata(4)) > 0 })
	if got := umPartitions(cl.rec.rawMetadata(4)[0]); len(got) != 30 {
		t.Fatalf("the new broker's first UpdateMetadata names %d partitions, want 30", len(got))
	}
}

// Hundreds of ISR change notifications (a broker returning writes one per
// partition) are read and their states refreshed with reads in flight
// together, deleted in Multis, and the brokers told the new ISRs.
func TestManyIsrChangeNotifications(t *testing.T) {
	const n = 300
	var cs *countingStore
	parts := map[int32][]int32{}
	for p := range int32(n) {
		parts[p] = []int32{1, 2}
	}
	cl := newClusterWith(t, []int32{1, 2}, map[string]map[int32][]int32{"t": parts}, Config{BrokerID: 1}, func(s coord.Store) coord.Store {
		cs = &countingStore{Store: s}
		return cs
	})
	cl.waitState("t", n-1, 1, ids(1, 2))
	// The leader shrinks every ISR to itself, one notification each.
	for p := range int32(n) {
		li := cl.state("t", p)
		li.ISR = ids(1)
		if _, err := cl.admin.Set(cl.ctx, zkdata.PartitionStatePath("t", p), zkdata.EncodeLeaderIsr(li), li.ZkVersion); err != nil {
			t.Fatal(err)
		}
	}
	before := cs.count()
	for p := range int32(n) {
		note := zkdata.EncodeIsrChange([]zkdata.TopicPartition{{Topic: "t", Partition: p}})
		if _, err := cl.admin.Create(cl.ctx, zkdata.IsrChangePath(), note, coord.PersistentSequential); err != nil {
			t.Fatal(err)
		}
	}
	cl.waitFor("every ISR change seen", func() bool {
		st := cl.c.Snapshot().States
		for p := range int32(n) {
			if len(st[TP{"t", p}].ISR) != 1 {
				return false
			}
		}
		return true
	})
	cl.waitFor("the notifications deleted", func() bool {
		kids, _, err := cl.admin.Children(cl.ctx, zkdata.IsrChangeNotificationPath)
		return err == nil && len(kids) == 0
	})
	if m := cs.count() - before; m == 0 {
		t.Fatal("the notifications were not deleted in Multis")
	}
	if md := cl.rec.lastMetadata(2); md == nil || len(md.TopicStates) != 1 {
		t.Fatal("no metadata")
	} else {
		for _, p := range md.TopicStates[0].PartitionStates {
			if len(p.ISR) != 1 {
				t.Fatalf("broker 2 was told t-%d has ISR %v", p.Partition, p.ISR)
			}
		}
	}
}

// overlapStore records how many partition state reads are in flight at once;
// each takes a millisecond, as over a network.
type overlapStore struct {
	coord.Store
	mu               sync.Mutex
	inFlight, most   int
	stateReads, seen int
}

func (s *overlapStore) Get(ctx context.Context, path string) ([]byte, coord.Stat, error) {
	if !strings.HasSuffix(path, "/state") {
		return s.Store.Get(ctx, path)
	}
	s.mu.Lock()
	s.inFlight++
	s.seen++
	s.most = max(s.most, s.inFlight)
	s.mu.Unlock()
	time.Sleep(time.Millisecond)
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()
	return s.Store.Get(ctx, path)
}

// TestLoadReadsStatesTogether: a new controller reads the state znodes of a
// topic's partitions several at a time, not each after the last one's
// answer (10,000 of them took 20 s before it could elect a leader).
func TestLoadReadsStatesTogether(t *testing.T) {
	const n = 300
	parts := map[int32][]int32{}
	for p := range int32(n) {
		parts[p] = []int32{p%3 + 1, (p+1)%3 + 1}
	}
	var os *overlapStore
	cl := newClusterWith(t, []int32{1, 2, 3}, map[string]map[int32][]int32{"many": parts}, Config{BrokerID: 1}, func(s coord.Store) coord.Store {
		os = &overlapStore{Store: s}
		return os
	})
	cl.waitFor("every partition loaded", func() bool { return len(cl.c.Snapshot().States) >= n })
	os.mu.Lock()
	defer os.mu.Unlock()
	if os.seen < n {
		t.Fatalf("%d state reads for %d partitions", os.seen, n)
	}
	if os.most < 2 {
		t.Fatalf("at most %d state read in flight while loading %d partitions", os.most, n)
	}
}
