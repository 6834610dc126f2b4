package broker

import (
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/auth"
	"github.com/ktoolhq/ktool/broker/controller"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// brokerEndpoint is a live broker as UpdateMetadata describes it: its
// address on each listener.
type brokerEndpoint struct {
	ID        int32
	Rack      *string
	Listeners map[string]hostPortPair // by upper-case listener name
}

type hostPortPair struct {
	Host string
	Port int32
}

// on is the broker's address on a listener; a broker without that listener
// cannot be reached by a client of it (Kafka leaves it out of Metadata).
func (e brokerEndpoint) on(listener string) (hostPortPair, bool) {
	hp, ok := e.Listeners[listener]
	return hp, ok
}

// partitionMeta is one partition's leadership as last told by the controller.
type partitionMeta struct {
	Leader          int32
	LeaderEpoch     int32
	ISR             []int32
	Replicas        []int32
	Offline         []int32
	ZkVersion       int32
	ControllerEpoch int32
}

// metaCache is the broker's view of the cluster, fed by UpdateMetadata from the
// controller, as in Kafka: a full view first, then the partitions that changed.
// Metadata requests are answered from it.
type metaCache struct {
	mu         sync.RWMutex
	controller int32
	brokers    map[int32]brokerEndpoint
	topics     map[string]map[int32]*partitionMeta
	topicIDs   map[string][16]byte
	changed    chan struct{} // closed and replaced on every update
	// The controller and broker epochs of the UpdateMetadata last applied.
	applied           bool
	umControllerEpoch int32
	umBrokerEpoch     int64
}

func newMetaCache() *metaCache {
	return &metaCache{
		controller: -1,
		brokers:    map[int32]brokerEndpoint{},
		topics:     map[string]map[int32]*partitionMeta{},
		topicIDs:   map[string][16]byte{},
		changed:    make(chan struct{}),
	}
}

// Changed returns a channel closed at the next update.
func (m *metaCache) Changed() <-chan struct{} {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.changed
}

// replaces reports whether req replaces the cache rather than updating it:
// the first UpdateMetadata of a controller (epoch) to this registration of the
// broker is the controller's full view; later ones carry what changed.
func (m *metaCache) replaces(req *kmsg.UpdateMetadataRequest) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.replacesLocked(req)
}

func (m *metaCache) replacesLocked(req *kmsg.UpdateMetadataRequest) bool {
	return !m.applied || req.ControllerEpoch != m.umControllerEpoch || req.ControllerID != m.controller ||
		req.BrokerEpoch != m.umBrokerEpoch
}

// leaderDuringDelete is the leader UpdateMetadata gives a partition that is
// gone (its topic deleted), as Kafka's controller does.
const leaderDuringDelete = -2

// apply applies an UpdateMetadata request and returns the topics it removed:
// the live brokers are replaced; the partitions replace the cache's when the
// request is a controller's full view (replaces), else they update it, a
// partition with leader -2 leaving it.
func (m *metaCache) apply(req *kmsg.UpdateMetadataRequest) (deleted []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	before := make(map[string]bool, len(m.topics))
	for t := range m.topics {
		before[t] = true
	}
	defer func() {
		for t := range before {
			if _, ok := m.topics[t]; !ok {
				deleted = append(deleted, t)
				delete(m.topicIDs, t)
			}
		}
	}()
	if m.replacesLocked(req) {
		m.topics = map[string]map[int32]*partitionMeta{}
	}
	m.applied, m.umControllerEpoch, m.umBrokerEpoch = true, req.ControllerEpoch, req.BrokerEpoch
	m.controller = req.ControllerID
	m.brokers = map[int32]brokerEndpoint{}
	for _, b := range req.LiveBrokers {
		ep := brokerEndpoint{ID: b.ID, Rack: b.Rack, Listeners: map[string]hostPortPair{}}
		for _, e := range b.Endpoints {
			ep.Listeners[strings.ToUpper(e.ListenerName)] = hostPortPair{e.Host, e.Port}
		}
		if len(b.Endpoints) == 0 {
			// UpdateMetadata v0 has only the PLAINTEXT address.
			ep.Listeners[auth.Plaintext] = hostPortPair{b.Host, b.Port}
		}
		m.brokers[b.ID] = ep
	}
	apply := func(topic string, p kmsg.UpdateMetadataRequestTopicPartition) {
		parts, ok := m.topics[topic]
		if p.Leader == leaderDuringDelete {
			if ok {
				delete(parts, p.Partition)
				if len(parts) == 0 {
					delete(m.topics, topic)
				}
			}
			return
		}
		if !ok {
			parts = map[int32]*partitionMeta{}
			m.topics[topic] = parts
		}
		parts[p.Partition] = &partitionMeta{
			Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, ISR: p.ISR, Replicas: p.Replicas,
			Offline: p.OfflineReplicas, ZkVersion: p.ZKVersion, ControllerEpoch: p.ControllerEpoch,
		}
	}
	for _, p := range req.PartitionStates {
		apply(p.Topic, p)
	}
	for _, t := range req.TopicStates {
		if t.TopicID != [16]byte{} {
			m.topicIDs[t.Topic] = t.TopicID
		}
		for _, p := range t.PartitionStates {
			apply(t.Topic, p)
		}
	}
	close(m.changed)
	m.changed = make(chan struct{})
	return deleted
}

// dropped lists the topics req would remove from the cache, or remove a
// partition of (leader -2): each must be gone from the store or being deleted.
func (m *metaCache) dropped(req *kmsg.UpdateMetadataRequest) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	left := map[string]map[int32]bool{}
	replace := m.replacesLocked(req)
	for t, parts := range m.topics {
		left[t] = map[int32]bool{}
		if !replace {
			for p := range parts {
				left[t][p] = true
			}
		}
	}
	each := func(topic string, p kmsg.UpdateMetadataRequestTopicPartition) {
		if left[topic] == nil {
			left[topic] = map[int32]bool{}
		}
		if p.Leader == leaderDuringDelete {
			delete(left[topic], p.Partition)
		} else {
			left[topic][p.Partition] = true
		}
	}
	for _, p := range req.PartitionStates {
		each(p.Topic, p)
	}
	for _, t := range req.TopicStates {
		for _, p := range t.PartitionStates {
			each(t.Topic, p)
		}
	}
	out := map[string]bool{}
	for t := range m.topics {
		if len(left[t]) == 0 {
			out[t] = true
		}
	}
	mark := func(topic string, p kmsg.UpdateMetadataRequestTopicPartition) {
		if p.Leader == leaderDuringDelete {
			out[topic] = true
		}
	}
	for _, p := range req.PartitionStates {
		mark(p.Topic, p)
	}
	for _, t := range req.TopicStates {
		for _, p := range t.PartitionStates {
			mark(t.Topic, p)
		}
	}
	names := make([]string, 0, len(out))
	for t := range out {
		names = append(names, t)
	}
	sort.Strings(names)
	return names
}

func (m *metaCache) controllerID() int32 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.controller
}

func (m *metaCache) broker(id int32) (brokerEndpoint, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	b, ok := m.brokers[id]
	return b, ok
}

func (m *metaCache) liveBrokers() []brokerEndpoint {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]brokerEndpoint, 0, len(m.brokers))
	for _, b := range m.brokers {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (m *metaCache) topicNames() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]string, 0, len(m.topics))
	for t := range m.topics {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// topic returns a copy of a topic's partitions, sorted by id.
func (m *metaCache) topic(name string) ([]int32, map[int32]partitionMeta, [16]byte, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	parts, ok := m.topics[name]
	if !ok {
		return nil, nil, [16]byte{}, false
	}
	ids := make([]int32, 0, len(parts))
	out := make(map[int32]partitionMeta, len(parts))
	for id, p := range parts {
		ids = append(ids, id)
		out[id] = *p
	}
	slices.Sort(ids)
	return ids, out, m.topicIDs[name], true
}

func (m *metaCache) partition(topic string, p int32) (partitionMeta, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	parts, ok := m.topics[topic]
	if !ok {
		return partitionMeta{}, false
	}
	pm, ok := parts[p]
	if !ok {
		return partitionMeta{}, false
	}
	return *pm, true
}

// controllerSeed is a copy of the partitions as the last controller told them,
// which a new controller on this broker starts from (controller/seed.go);
// nil before the first UpdateMetadata. Topics without an id are left out: the
// controller could not tell them from an earlier topic of that name.
func (m *metaCache) controllerSeed() controller.Seed {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if !m.applied {
		return nil
	}
	out := make(controller.Seed, len(m.topics))
	for t, parts := range m.topics {
		id := m.topicIDs[t]
		if id == ([16]byte{}) {
			continue
		}
		st := controller.SeedTopic{ID: id, Partitions: make(map[int32]zkdata.LeaderIsr, len(parts))}
		for p, pm := range parts {
			st.Partitions[p] = zkdata.LeaderIsr{Leader: pm.Leader, LeaderEpoch: pm.LeaderEpoch, ISR: slices.Clone(pm.ISR),
				ControllerEpoch: pm.ControllerEpoch, ZkVersion: pm.ZkVersion}
		}
		out[t] = st
	}
	return out
}
