package controller

import (
	"context"
	"encoding/base64"
	"strings"
	"sync"
	"testing"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// gatedStore holds every read of a partition state znode until open is
// closed, and counts them.
type gatedStore struct {
	coord.Store
	open  chan struct{}
	mu    sync.Mutex
	reads int
}

func (s *gatedStore) Get(ctx context.Context, path string) ([]byte, coord.Stat, error) {
	if strings.HasSuffix(path, "/state") {
		s.mu.Lock()
		s.reads++
		s.mu.Unlock()
		select {
		case <-s.open:
		case <-ctx.Done():
			return nil, coord.Stat{}, ctx.Err()
		}
	}
	return s.Store.Get(ctx, path)
}

// seedTopicID is the id of topic "a" in these tests.
var seedTopicID = [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}

// writeTopicA writes topic "a" (partitions 0 and 1 on brokers 1, 2, 3) with
// topic id id and the partition states states, as a controller would have.
func writeTopicA(t *testing.T, s coord.Store, id [16]byte, states map[int32]zkdata.LeaderIsr) {
	t.Helper()
	ctx := context.Background()
	a := zkdata.TopicAssignment{Partitions: threeBrokers()["a"], TopicID: base64.RawURLEncoding.EncodeToString(id[:])}
	if _, err := s.CreateAll(ctx, zkdata.TopicPath("a"), zkdata.EncodeTopicAssignment(a), coord.Persistent); err != nil {
		t.Fatal(err)
	}
	for p, li := range states {
		path := zkdata.PartitionStatePath("a", p)
		if _, err := s.CreateAll(ctx, path, zkdata.EncodeLeaderIsr(li), coord.Persistent); err != nil {
			t.Fatal(err)
		}
		// Bring the znode to the version the state says it is at.
		for v := int32(0); v < li.ZkVersion; v++ {
			if _, err := s.Set(ctx, path, zkdata.EncodeLeaderIsr(li), v); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestWarmStartElectsFromTheCopy: a new controller whose broker holds a copy
// of the states elects the leaders of the dead broker's partitions and tells
// the brokers while no state znode has been read (a cold start reads 10,000
// of them first), then reads every state back from the store.
func TestWarmStartElectsFromTheCopy(t *testing.T) {
	states := map[int32]zkdata.LeaderIsr{
		0: {Leader: 1, LeaderEpoch: 3, ISR: []int32{1, 2, 3}, ControllerEpoch: 1, ZkVersion: 2}, // led by the dead broker
		1: {Leader: 2, LeaderEpoch: 5, ISR: []int32{2, 3, 1}, ControllerEpoch: 1, ZkVersion: 4},
	}
	gs := &gatedStore{open: make(chan struct{})}
	cfg := Config{BrokerID: 2, Seed: func() Seed {
		return Seed{"a": {ID: seedTopicID, Partitions: states}}
	}}
	cl := newClusterWith(t, ids(2, 3), nil, cfg, func(s coord.Store) coord.Store {
		writeTopicA(t, s, seedTopicID, states)
		gs.Store = s
		return gs
	})
	for _, id := range ids(2, 3) {
		cl.waitFor("the new leader of a-0 told, no state read", func() bool { return cl.told(id, "a", 0, 2, 4) })
		cl.waitFor("metadata with the new leader", func() bool {
			md := cl.rec.lastMetadata(id)
			return md != nil && len(md.TopicStates) == 1 && len(md.TopicStates[0].PartitionStates) == 2 &&
				md.TopicStates[0].PartitionStates[0].Leader == 2
		})
	}
	gs.mu.Lock()
	reads := gs.reads
	gs.mu.Unlock()
	if reads > 2 {
		t.Fatalf("%d state reads before the gate opened; at most the 2 of the read back may wait", reads)
	}
	close(gs.open)
	cl.waitState("a", 0, 2, ids(2, 3))
	cl.waitState("a", 1, 2, ids(2, 3))
}

// TestWarmStartWithStaleCopy: the copy says a-0's ISR is {1, 2, 3}, but its
// leader, broker 1, shrank it to {1} before it died (the old controller died
// too, before telling anyone). The new controller must not elect broker 2
// from the stale copy: its conditional write fails on the version, it reads
// the state and finds no live in-sync replica.
func TestWarmStartWithStaleCopy(t *testing.T) {
	copied := map[int32]zkdata.LeaderIsr{
		0: {Leader: 1, LeaderEpoch: 3, ISR: []int32{1, 2, 3}, ControllerEpoch: 1, ZkVersion: 2},
		1: {Leader: 2, LeaderEpoch: 5, ISR: []int32{2, 3, 1}, ControllerEpoch: 1, ZkVersion: 4},
	}
	store := map[int32]zkdata.LeaderIsr{
		0: {Leader: 1, LeaderEpoch: 3, ISR: []int32{1}, ControllerEpoch: 1, ZkVersion: 3},
		1: copied[1],
	}
	cfg := Config{BrokerID: 2, Seed: func() Seed { return Seed{"a": {ID: seedTopicID, Partitions: copied}} }}
	cl := newClusterWith(t, ids(2, 3), nil, cfg, func(s coord.Store) coord.Store {
		writeTopicA(t, s, seedTopicID, store)
		return s
	})
	cl.waitState("a", 1, 2, ids(2, 3))
	cl.waitState("a", 0, -1, ids(1))
	for _, id := range ids(2, 3) {
		for _, p := range cl.rec.leaderAndIsr(id) {
			if p.Partition == 0 && p.Leader == 2 {
				t.Fatalf("broker %d was told broker 2 leads a-0 (epoch %d ISR %v): elected from the stale copy", id, p.LeaderEpoch, p.ISR)
			}
		}
	}
}

// TestWarmStartIgnoresAnEarlierTopic: the copy holds topic "a" under another
// topic id, an earlier topic of that name whose state znode stood at the same
// version as the new one's. The new controller reads the new topic's states
// from the store.
func TestWarmStartIgnoresAnEarlierTopic(t *testing.T) {
	earlier := map[int32]zkdata.LeaderIsr{
		0: {Leader: 1, LeaderEpoch: 0, ISR: []int32{1, 2, 3}, ControllerEpoch: 1},
		1: {Leader: 2, LeaderEpoch: 0, ISR: []int32{2, 3, 1}, ControllerEpoch: 1},
	}
	store := map[int32]zkdata.LeaderIsr{
		0: {Leader: 1, LeaderEpoch: 0, ISR: []int32{1}, ControllerEpoch: 1},
		1: earlier[1],
	}
	other := seedTopicID
	other[0] = 99
	cfg := Config{BrokerID: 2, Seed: func() Seed { return Seed{"a": {ID: other, Partitions: earlier}} }}
	cl := newClusterWith(t, ids(2, 3), nil, cfg, func(s coord.Store) coord.Store {
		writeTopicA(t, s, seedTopicID, store)
		return s
	})
	cl.waitState("a", 1, 2, ids(2, 3))
	cl.waitState("a", 0, -1, ids(1))
	if n := cl.logs.count("partition states from this broker's copy"); n != 0 {
		t.Fatalf("a warm start from a copy of another topic (%d log lines)", n)
	}
}
