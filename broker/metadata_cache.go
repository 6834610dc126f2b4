package broker

import (
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/auth"
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
// controller, as in Kafka. Metadata requests are answered from it.
type metaCache struct {
	mu         sync.RWMutex
	controller int32
	brokers    map[int32]brokerEndpoint
	topics     map[string]map[int32]*partitionMeta
	topicIDs   map[string][16]byte
	changed    chan struct{} // closed and replaced on every update
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

// apply applies an UpdateMetadata request and returns the topics it removed.
func (m *metaCache) apply(req *kmsg.UpdateMetadataRequest) (deleted []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	before := m.topics
	defer func() {
		for t := range before {
			if _, ok := m.topics[t]; !ok {
				deleted = append(deleted, t)
			}
		}
	}()
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
	// The controller always sends its full view, so the cache is replaced, which
	// also drops deleted topics.
	m.topics = map[string]map[int32]*partitionMeta{}
	apply := func(topic string, p kmsg.UpdateMetadataRequestTopicPartition) {
		parts, ok := m.topics[topic]
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
