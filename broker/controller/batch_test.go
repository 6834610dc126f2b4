package controller

import (
	"context"
	"sync"
	"testing"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// countingStore counts the controller's Multis and can run a hook before one.
type countingStore struct {
	coord.Store
	mu     sync.Mutex
	multis int
	before func(n int)
}

func (s *countingStore) Multi(ctx context.Context, ops ...coord.Op) error {
	s.mu.Lock()
	s.multis++
	n, hook := s.multis, s.before
	s.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	return s.Store.Multi(ctx, ops...)
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
	// About 300 bytes of ops per partition: 1.5 MB in parts of 512 KiB.
	if created > 5 {
		t.Fatalf("%d Multis to create %d partition states", created, n)
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
	if m := cs.count() - before; m > 12 {
		t.Fatalf("%d Multis to elect and shrink %d partitions", m, n)
	}
}

