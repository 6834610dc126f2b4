package broker

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func umReq(controllerEpoch int32, brokerEpoch int64, parts map[string]map[int32]int32) *kmsg.UpdateMetadataRequest {
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.SetVersion(7)
	req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = 1, controllerEpoch, brokerEpoch
	var names []string
	for t := range parts {
		names = append(names, t)
	}
	slices.Sort(names)
	for _, t := range names {
		ts := kmsg.NewUpdateMetadataRequestTopicState()
		ts.Topic = t
		for p, leader := range parts[t] {
			ps := kmsg.NewUpdateMetadataRequestTopicPartition()
			ps.Partition, ps.Leader, ps.LeaderEpoch = p, leader, 1
			ts.PartitionStates = append(ts.PartitionStates, ps)
		}
		req.TopicStates = append(req.TopicStates, ts)
	}
	return req
}

func leaders(m *metaCache) map[string]map[int32]int32 {
	out := map[string]map[int32]int32{}
	for _, t := range m.topicNames() {
		ids, parts, _, _ := m.topic(t)
		out[t] = map[int32]int32{}
		for _, id := range ids {
			out[t][id] = parts[id].Leader
		}
	}
	return out
}

// The metadata cache takes a controller's first UpdateMetadata as the full
// view and merges the later ones: partitions named replace theirs, the rest
// stay, leader -2 drops a partition (and a topic left without any). A new
// controller epoch, or a new registration of this broker, is a full view again.
func TestMetadataCacheMergesIncrementalUpdates(t *testing.T) {
	m := newMetaCache()
	full := umReq(1, 10, map[string]map[int32]int32{"a": {0: 1, 1: 2}, "b": {0: 3}})
	if !m.replaces(full) {
		t.Fatal("the first UpdateMetadata does not replace")
	}
	m.apply(full)
	delta := umReq(1, 10, map[string]map[int32]int32{"a": {1: 3}})
	if m.replaces(delta) || len(m.dropped(delta)) != 0 {
		t.Fatalf("a delta replaces (%v) or drops %v", m.replaces(delta), m.dropped(delta))
	}
	m.apply(delta)
	if got := leaders(m); got["a"][0] != 1 || got["a"][1] != 3 || got["b"][0] != 3 {
		t.Fatalf("after a delta: %v", got)
	}
	del := umReq(1, 10, map[string]map[int32]int32{"b": {0: leaderDuringDelete}})
	if got := m.dropped(del); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("dropped %v, want [b]", got)
	}
	// A mark on one partition of a topic names the topic (it must be going).
	if got := m.dropped(umReq(1, 10, map[string]map[int32]int32{"a": {0: leaderDuringDelete}})); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("dropped %v, want [a]", got)
	}
	if deleted := m.apply(del); !slices.Equal(deleted, []string{"b"}) {
		t.Fatalf("deleted %v, want [b]", deleted)
	}
	if got := leaders(m); len(got) != 1 || len(got["a"]) != 2 {
		t.Fatalf("after deleting b: %v", got)
	}
	// A new controller's full view replaces: what it leaves out is dropped.
	next := umReq(2, 10, map[string]map[int32]int32{"c": {0: 1}})
	if !m.replaces(next) || !slices.Equal(m.dropped(next), []string{"a"}) {
		t.Fatalf("a new controller epoch: replaces %v, drops %v", m.replaces(next), m.dropped(next))
	}
	m.apply(next)
	if got := leaders(m); len(got) != 1 || got["c"][0] != 1 {
		t.Fatalf("after a new controller's view: %v", got)
	}
	if again := umReq(2, 11, nil); !m.replaces(again) {
		t.Fatal("an UpdateMetadata for a new registration of this broker does not replace")
	}
}

// The cache's copy for a new controller (controller/seed.go) holds every
// partition of the topics with an id as the controller last described it,
// the version of its state znode included; none before the first
// UpdateMetadata.
func TestMetadataCacheControllerSeed(t *testing.T) {
	m := newMetaCache()
	if s := m.controllerSeed(); s != nil {
		t.Fatalf("a seed before any UpdateMetadata: %v", s)
	}
	req := umReq(1, 10, map[string]map[int32]int32{"a": {0: 1, 1: 2}, "noid": {0: 3}})
	id := [16]byte{7}
	for i := range req.TopicStates {
		ts := &req.TopicStates[i]
		if ts.Topic == "a" {
			ts.TopicID = id
		}
		for j := range ts.PartitionStates {
			ts.PartitionStates[j].ISR = []int32{1, 2}
			ts.PartitionStates[j].ZKVersion = 4 + ts.PartitionStates[j].Partition
			ts.PartitionStates[j].ControllerEpoch = 1
		}
	}
	m.apply(req)
	s := m.controllerSeed()
	if _, ok := s["noid"]; ok || len(s) != 1 {
		t.Fatalf("seed topics %v: want only a (noid has no topic id)", s)
	}
	a := s["a"]
	if a.ID != id || len(a.Partitions) != 2 {
		t.Fatalf("seed of a: %+v", a)
	}
	p1 := a.Partitions[1]
	if p1.Leader != 2 || p1.LeaderEpoch != 1 || !slices.Equal(p1.ISR, []int32{1, 2}) || p1.ZkVersion != 5 || p1.ControllerEpoch != 1 {
		t.Fatalf("seed of a-1: %+v", p1)
	}
}
