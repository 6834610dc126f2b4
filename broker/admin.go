package broker

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/broker/config"
	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/broker/replica"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// offsetsTopic is the internal topic of consumer group offsets.
const offsetsTopic = "__consumer_offsets"

// internalTopic reports whether name is one of Kafka's internal topics (the
// coordinators' state), which clients may not create, delete or produce to.
func internalTopic(name string) bool { return name == offsetsTopic || name == txnTopic }

var legalTopic = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)

// validateTopicName applies Kafka's rules for topic names.
func validateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: topic name is empty", kerr.InvalidTopicException)
	case name == "." || name == "..":
		return fmt.Errorf("%w: topic name cannot be %q", kerr.InvalidTopicException, name)
	case len(name) > 249:
		return fmt.Errorf("%w: topic name is longer than 249 characters", kerr.InvalidTopicException)
	case !legalTopic.MatchString(name):
		return fmt.Errorf("%w: topic name %q has characters other than ASCII letters, digits, '.', '_' and '-'", kerr.InvalidTopicException, name)
	}
	return nil
}

// topicSpec is a topic to create.
type topicSpec struct {
	Name              string
	Partitions        int32 // -1: num.partitions
	ReplicationFactor int16 // -1: default.replication.factor
	Assignment        map[int32][]int32
	Configs           map[string]string
}

// planTopic validates a topic and computes its replica assignment.
func (b *Broker) planTopic(spec *topicSpec) error {
	if err := validateTopicName(spec.Name); err != nil {
		return err
	}
	if err := config.ValidateTopicConfigs(spec.Configs); err != nil {
		return fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
	}
	live := b.liveBrokerIDs()
	if spec.Partitions < -1 {
		return fmt.Errorf("%w: number of partitions must be larger than 0 (or -1 for num.partitions)", kerr.InvalidPartitions)
	}
	if spec.ReplicationFactor < -1 {
		return fmt.Errorf("%w: replication factor must be larger than 0 (or -1 for default.replication.factor)", kerr.InvalidReplicationFactor)
	}
	if len(spec.Assignment) > 0 {
		if spec.Partitions > 0 || spec.ReplicationFactor > 0 {
			return fmt.Errorf("%w: give either an assignment or partitions and replication factor", kerr.InvalidRequest)
		}
		n := -1
		for p := int32(0); p < int32(len(spec.Assignment)); p++ {
			r, ok := spec.Assignment[p]
			if !ok {
				return fmt.Errorf("%w: assignment partitions must be 0..%d", kerr.InvalidReplicaAssignment, len(spec.Assignment)-1)
			}
			if n >= 0 && len(r) != n {
				return fmt.Errorf("%w: partitions have different replica counts", kerr.InvalidReplicaAssignment)
			}
			n = len(r)
			if n == 0 {
				return fmt.Errorf("%w: partition %d has no replicas", kerr.InvalidReplicaAssignment, p)
			}
			seen := map[int32]bool{}
			for _, id := range r {
				if seen[id] {
					return fmt.Errorf("%w: partition %d lists broker %d twice", kerr.InvalidReplicaAssignment, p, id)
				}
				if !containsID(live, id) {
					return fmt.Errorf("%w: broker %d in the assignment of partition %d is not registered", kerr.InvalidReplicaAssignment, id, p)
				}
				seen[id] = true
			}
		}
		return b.checkPartitionLimits(int64(len(spec.Assignment)), int64(n), live, spec.Assignment)
	}
	if spec.Partitions < 0 {
		spec.Partitions = b.cfg.Settings().NumPartitions
	}
	if spec.ReplicationFactor < 0 {
		spec.ReplicationFactor = int16(b.cfg.Settings().DefaultReplicationFactor)
	}
	if spec.Partitions == 0 {
		return fmt.Errorf("%w: number of partitions must be larger than 0", kerr.InvalidPartitions)
	}
	if spec.ReplicationFactor <= 0 {
		return fmt.Errorf("%w: replication factor must be larger than 0", kerr.InvalidReplicationFactor)
	}
	if int(spec.ReplicationFactor) > len(live) {
		return fmt.Errorf("%w: replication factor: %d larger than available brokers: %d",
			kerr.InvalidReplicationFactor, spec.ReplicationFactor, len(live))
	}
	if err := b.checkPartitionLimits(int64(spec.Partitions), int64(spec.ReplicationFactor), live, nil); err != nil {
		return err
	}
	a, err := b.assignReplicas(live, int(spec.Partitions), int(spec.ReplicationFactor), 0, -1)
	if err != nil {
		return fmt.Errorf("%w: %v", kerr.InvalidReplicationFactor, err)
	}
	spec.Assignment = a
	return nil
}

// liveBrokerIDs lists registered brokers (from the store, so it is right even
// before this broker has metadata).
func (b *Broker) liveBrokerIDs() []int32 {
	ids, _, err := b.Store().Children(b.ctx, zkdata.BrokerIDsPath)
	if err != nil {
		var out []int32
		for _, e := range b.meta.liveBrokers() {
			out = append(out, e.ID)
		}
		return out
	}
	var out []int32
	for _, s := range ids {
		var id int32
		if _, err := fmt.Sscan(s, &id); err == nil {
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// createTopic writes a topic's config and assignment to the store, as Kafka's
// AdminZkClient does; the controller notices and elects leaders.
func (b *Broker) createTopic(ctx context.Context, spec topicSpec) error {
	if err := b.planTopic(&spec); err != nil {
		return err
	}
	return b.writeTopic(ctx, spec)
}

func (b *Broker) writeTopic(ctx context.Context, spec topicSpec) error {
	s := b.Store()
	if ok, _, err := s.Exists(ctx, zkdata.TopicPath(spec.Name)); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("%w: topic %q already exists", kerr.TopicAlreadyExists, spec.Name)
	}
	if err := b.checkTopicCollision(ctx, spec.Name); err != nil {
		return err
	}
	id, err := zkdata.RandomUUID()
	if err != nil {
		return err
	}
	data := zkdata.EncodeTopicAssignment(zkdata.TopicAssignment{Partitions: spec.Assignment, TopicID: id})
	if err := coord.CheckWriteSize(coord.CreateOp(zkdata.TopicPath(spec.Name), data, coord.Persistent), 0); err != nil {
		// One znode holds a topic's whole assignment, as in Kafka: ZooKeeper's
		// 1 MiB jute.maxbuffer bounds the partitions of one topic (about
		// 60,000 at RF=3).
		return fmt.Errorf("%w: the assignment of %d partitions is %d bytes, more than ZooKeeper's jute.maxbuffer (%d): %v",
			kerr.InvalidPartitions, len(spec.Assignment), len(data), coord.MaxRequestBytes, err)
	}
	cfgPath := zkdata.ConfigTopicPath(spec.Name)
	if _, err := s.CreateAll(ctx, cfgPath, zkdata.EncodeConfig(spec.Configs), coord.Persistent); errors.Is(err, coord.ErrNodeExists) {
		if _, err := s.Set(ctx, cfgPath, zkdata.EncodeConfig(spec.Configs), -1); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	b.setTopicOverrides(spec.Name, spec.Configs)
	if _, err := s.CreateAll(ctx, zkdata.TopicPath(spec.Name), data, coord.Persistent); err != nil {
		if errors.Is(err, coord.ErrNodeExists) {
			return fmt.Errorf("%w: topic %q already exists", kerr.TopicAlreadyExists, spec.Name)
		}
		return err
	}
	b.logger.Info("topic created", "topic", spec.Name, "partitions", len(spec.Assignment))
	return nil
}

// checkTopicCollision refuses names that differ only in '.' vs '_' (they collide
// in metric names), as Kafka does.
func (b *Broker) checkTopicCollision(ctx context.Context, name string) error {
	norm := strings.ReplaceAll(name, ".", "_")
	names, _, err := b.Store().Children(ctx, zkdata.TopicsPath)
	if err != nil {
		return nil
	}
	for _, n := range names {
		if n != name && strings.ReplaceAll(n, ".", "_") == norm {
			return fmt.Errorf("%w: topic %q collides with existing %q", kerr.InvalidTopicException, name, n)
		}
	}
	return nil
}

// waitTopicLeaders waits until the metadata cache shows leaders for every partition
// of topics (or they are absent when gone is set), bounded by ctx.
func (b *Broker) waitTopics(ctx context.Context, topics []string, gone bool) error {
	for {
		ch := b.meta.Changed()
		done := true
		for _, t := range topics {
			_, parts, _, ok := b.meta.topic(t)
			if gone {
				if ok {
					done = false
				}
				continue
			}
			if !ok {
				done = false
				continue
			}
			for _, p := range parts {
				if p.Leader < 0 {
					done = false
				}
			}
		}
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return kerr.RequestTimedOut
		}
	}
}

// ensureOffsetsTopic creates __consumer_offsets on first use with
// offsets.topic.replication.factor replicas; a standalone broker caps it at one,
// so it works out of the box.
func (b *Broker) ensureOffsetsTopic(ctx context.Context) error {
	if _, _, _, ok := b.meta.topic(offsetsTopic); ok {
		return nil
	}
	rf := int64(b.cfg.Settings().OffsetsTopicReplicationFactor)
	live := int64(len(b.liveBrokerIDs()))
	if b.embedded != nil {
		// Standalone: one broker is all there will ever be.
		rf = min(rf, live)
	}
	if rf < 1 || rf > live {
		// As Kafka: wait for enough brokers rather than create a topic whose
		// replication factor would stay too low for good.
		return fmt.Errorf("%w: __consumer_offsets needs %d live brokers (offsets.topic.replication.factor), %d are registered",
			kerr.CoordinatorNotAvailable, rf, live)
	}
	err := b.createTopic(ctx, topicSpec{
		Name: offsetsTopic, Partitions: b.cfg.Settings().OffsetsTopicPartitions, ReplicationFactor: int16(rf),
		Configs: map[string]string{
			"cleanup.policy":   "compact",
			"compression.type": "producer",
			"segment.bytes":    strconv.FormatInt(int64(b.cfg.Settings().OffsetsTopicSegmentBytes), 10),
		},
	})
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return err
	}
	return nil
}

// ---- topic configs ----

// topicConfigs caches the per-topic overrides kept in /config/topics.
type topicConfigs struct {
	mu sync.RWMutex
	m  map[string]map[string]string
	// A lock of load is held from reading a config entity in the store to
	// keeping it (topic overrides, this broker's dynamic settings): a load
	// that read before a change then never keeps its value after the load
	// that read the change, which would leave the broker on the old value
	// until the next change. Entities share locks by hash, so loads of many
	// topics (a broker taking on thousands) do not wait for one another.
	load [64]sync.Mutex
}

// loadLock is the lock of entity's loads.
func (c *topicConfigs) loadLock(entity string) *sync.Mutex {
	h := fnv.New32a()
	h.Write([]byte(entity))
	return &c.load[h.Sum32()%uint32(len(c.load))]
}

// topicOverrides returns a topic's config overrides, reading /config/topics/<topic>
// the first time a topic is seen (a broker learns a new topic's configs when it
// first hosts or serves it, as Kafka's log manager does).
func (b *Broker) topicOverrides(topic string) map[string]string {
	b.tcfg.mu.RLock()
	m, ok := b.tcfg.m[topic]
	b.tcfg.mu.RUnlock()
	if ok {
		return m
	}
	l := b.tcfg.loadLock(zkdata.ConfigTypeTopic + "/" + topic)
	l.Lock()
	defer l.Unlock()
	b.tcfg.mu.RLock()
	m, ok = b.tcfg.m[topic]
	b.tcfg.mu.RUnlock()
	if ok {
		return m // loaded while this waited
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := b.storedTopicOverrides(ctx, topic)
	if err != nil {
		return nil // store unreachable: defaults for now, retried on the next call
	}
	b.setTopicOverrides(topic, m)
	return m
}

// storedTopicOverrides reads a topic's overrides from /config/topics/<topic>:
// what the last acknowledged config change wrote, which this broker's cache
// shows only once it followed that change's notification.
func (b *Broker) storedTopicOverrides(ctx context.Context, topic string) (map[string]string, error) {
	s := b.Store()
	if s == nil {
		return nil, errors.New("no coordination store")
	}
	data, _, err := s.Get(ctx, zkdata.ConfigTopicPath(topic))
	switch {
	case err == nil:
		m, err := zkdata.DecodeConfig(data)
		if err != nil {
			b.logger.Warn("unreadable topic config", "topic", topic, "err", err)
		}
		return m, err
	case errors.Is(err, coord.ErrNoNode):
		return map[string]string{}, nil
	default:
		return nil, err
	}
}

func (b *Broker) setTopicOverrides(topic string, m map[string]string) {
	b.tcfg.mu.Lock()
	if b.tcfg.m == nil {
		b.tcfg.m = map[string]map[string]string{}
	}
	b.tcfg.m[topic] = m
	b.tcfg.mu.Unlock()
}

// forgetTopicOverrides drops a deleted topic's cached overrides, so a topic
// created again under the same name starts from its own configs.
func (b *Broker) forgetTopicOverrides(topic string) {
	b.tcfg.mu.Lock()
	delete(b.tcfg.m, topic)
	b.tcfg.mu.Unlock()
}

// loadTopicConfigs reads every topic's overrides and the dynamic broker configs.
func (b *Broker) loadTopicConfigs(ctx context.Context) {
	s := b.Store()
	names, _, err := s.Children(ctx, zkdata.ConfigTopicsPath)
	if err == nil {
		for _, t := range names {
			b.reloadEntity(ctx, zkdata.ConfigTypeTopic+"/"+t)
		}
	}
	b.reloadEntity(ctx, zkdata.ConfigTypeBroker+"/"+zkdata.DefaultConfigEntity)
	b.reloadEntity(ctx, fmt.Sprintf("%s/%d", zkdata.ConfigTypeBroker, b.id))
	b.loadQuotas(ctx)
}

// loadEntity reads a topic's or this broker's config entity from the store
// and keeps it, under its load lock; false when it could not be read.
func (b *Broker) loadEntity(ctx context.Context, kind, name string) bool {
	entity := kind + "/" + name
	l := b.tcfg.loadLock(entity)
	l.Lock()
	defer l.Unlock()
	data, _, err := b.Store().Get(ctx, zkdata.ConfigEntityPath(kind, name))
	var m map[string]string
	switch {
	case err == nil:
		if m, err = zkdata.DecodeConfig(data); err != nil {
			b.logger.Warn("unreadable config", "entity", entity, "err", err)
			return false
		}
	case errors.Is(err, coord.ErrNoNode):
		m = map[string]string{}
	default:
		b.logger.Warn("reading config", "entity", entity, "err", err)
		return false
	}
	switch {
	case kind == zkdata.ConfigTypeTopic:
		b.setTopicOverrides(name, m)
	case name == zkdata.DefaultConfigEntity:
		b.cfg.SetDynamicDefault(m)
	default:
		b.cfg.SetDynamic(m)
	}
	return true
}

// reloadEntity re-reads one config entity ("topics/T", "brokers/<id>", "brokers/<default>").
func (b *Broker) reloadEntity(ctx context.Context, entity string) {
	kind, name, ok := strings.Cut(entity, "/")
	if !ok {
		return
	}
	if kind == zkdata.ConfigTypeUser || kind == zkdata.ConfigTypeClient {
		b.loadQuotas(ctx)
		return
	}
	switch {
	case kind == zkdata.ConfigTypeTopic:
	case kind == zkdata.ConfigTypeBroker && (name == zkdata.DefaultConfigEntity || name == fmt.Sprint(b.id)):
	default:
		return // another broker's settings, or no kind of ours
	}
	if !b.loadEntity(ctx, kind, name) || b.replicas == nil {
		return
	}
	if kind == zkdata.ConfigTypeTopic {
		b.replicas.ApplyTopicSettings(name)
		return
	}
	for _, t := range b.meta.topicNames() {
		b.replicas.ApplyTopicSettings(t)
	}
}

// startWatches follows config change notifications for this session.
func (b *Broker) startWatches(s coord.Store) {
	go b.watchConfigChanges(s)
	if b.authz != nil {
		go b.authz.Run(b.ctx, s)
	}
}

func (b *Broker) watchConfigChanges(s coord.Store) {
	ctx := b.ctx
	if _, err := s.CreateAll(ctx, zkdata.ConfigChangesPath, nil, coord.Persistent); err != nil && !errors.Is(err, coord.ErrNodeExists) {
		b.logger.Warn("config change notifications unavailable", "err", err)
		return
	}
	// Configs were loaded in full at start: follow the changes made after
	// the newest notification there now. One made between the listing and
	// the load below is applied twice, which changes nothing.
	names, _, err := s.Children(ctx, zkdata.ConfigChangesPath)
	if err != nil {
		b.logger.Warn("config change notifications unavailable", "err", err)
		return
	}
	last := ""
	for _, n := range names {
		last = max(last, n)
	}
	b.loadTopicConfigs(ctx)
	coord.Follow(ctx, s, zkdata.ConfigChangesPath, last, func(_ string, data []byte) {
		if entity, err := zkdata.DecodeConfigChange(data); err == nil {
			b.reloadEntity(ctx, entity)
		}
	})
}

// writeConfig stores an entity's overrides and notifies every broker.
func (b *Broker) writeConfig(ctx context.Context, kind, name string, m map[string]string) error {
	if kind == zkdata.ConfigTypeTopic {
		// The name becomes a znode: checked where the path is built.
		if err := validateTopicName(name); err != nil {
			return err
		}
	}
	s := b.Store()
	path := zkdata.ConfigEntityPath(kind, name)
	if _, err := s.Set(ctx, path, zkdata.EncodeConfig(m), -1); errors.Is(err, coord.ErrNoNode) {
		if _, err := s.CreateAll(ctx, path, zkdata.EncodeConfig(m), coord.Persistent); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	if _, err := s.CreateAll(ctx, zkdata.ConfigChangePath(), zkdata.EncodeConfigChange(kind+"/"+name), coord.PersistentSequential); err != nil {
		return err
	}
	b.reloadEntity(ctx, kind+"/"+name)
	return nil
}

// ---- ISR writes (leader side) ----

// isrWriter writes a leader's ISR change conditionally and leaves an ISR change
// notification for the controller.
type isrWriter struct{ b *Broker }

func (w isrWriter) WriteIsr(ctx context.Context, tp replica.TP, st replica.State) (int32, error) {
	s := w.b.Store()
	li := zkdata.LeaderIsr{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch, ISR: st.ISR, ControllerEpoch: st.ControllerEpoch}
	path := zkdata.PartitionStatePath(tp.Topic, tp.Partition)
	version := int32(-1)
	nst, err := s.Set(ctx, path, zkdata.EncodeLeaderIsr(li), st.ZkVersion)
	if err == nil {
		version = nst.Version
	} else {
		// The outcome may be unknown (a timeout, a lost connection after the
		// write) or the write may have happened before: read it back, and count
		// it as written when the znode holds exactly our state, as Kafka does.
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		data, gst, gerr := s.Get(rctx, path)
		cancel()
		if gerr != nil {
			return 0, err
		}
		cur, derr := zkdata.DecodeLeaderIsr(data, gst.Version)
		if derr != nil || cur.Leader != li.Leader || cur.LeaderEpoch != li.LeaderEpoch || !slices.Equal(cur.ISR, li.ISR) {
			return 0, err
		}
		version = gst.Version
	}
	w.b.isrNotes.changed(zkdata.TopicPartition{Topic: tp.Topic, Partition: tp.Partition})
	return version, nil
}

// ReadIsr reads a partition's state znode (replica.IsrReader).
func (w isrWriter) ReadIsr(ctx context.Context, tp replica.TP) (replica.State, error) {
	data, st, err := w.b.Store().Get(ctx, zkdata.PartitionStatePath(tp.Topic, tp.Partition))
	if err != nil {
		return replica.State{}, err
	}
	cur, err := zkdata.DecodeLeaderIsr(data, st.Version)
	if err != nil {
		return replica.State{}, err
	}
	return replica.State{Leader: cur.Leader, LeaderEpoch: cur.LeaderEpoch, ISR: cur.ISR,
		ControllerEpoch: cur.ControllerEpoch, ZkVersion: st.Version}, nil
}

func hostPort(host string, port int32) string { return fmt.Sprintf("%s:%d", host, port) }

// adminTimeout bounds admin waits by the request's timeout_ms.
func adminTimeout(ms int32) time.Duration {
	if ms <= 0 {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}
