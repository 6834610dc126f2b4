package controller

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// sender delivers controller requests to one broker in order, retrying while the
// broker is alive; requests carry the controller epoch and the broker's epoch, so
// a late one is refused by the broker rather than applied.
type sender struct {
	id     int32
	client *protocol.Client
	cancel context.CancelFunc
	done   chan struct{}
	c      *Controller

	// queue never drops a LeaderAndIsr or StopReplica (a broker that missed one
	// would keep a stale role); an UpdateMetadata queued last (nothing queued
	// after it) takes in a newer one, whose partitions replace its own.
	mu    sync.Mutex
	queue []kmsg.Request
	wake  chan struct{}
	// idle is closed while nothing is queued or in flight.
	idle       chan struct{}
	idleClosed bool
}

// A peer carries the controller's requests to one broker: a sender over the
// Kafka protocol, or a recorder in the package's tests.
type peer interface {
	addr() string
	// send queues req; it never blocks on the broker.
	send(req kmsg.Request)
	// stop ends delivery and waits until the peer is idle.
	stop()
	// drained is closed once everything queued has been delivered.
	drained() <-chan struct{}
}

func (c *Controller) ensureSender(id int32) {
	addr, ok := c.brokerAddr(id)
	if !ok {
		return
	}
	if s, ok := c.senders[id]; ok {
		if s.addr() == addr {
			return
		}
		s.stop()
	}
	c.senders[id] = c.connect(id, addr)
}

// dial starts a sender to broker id at addr.
func (c *Controller) dial(id int32, addr string) peer {
	ctx, cancel := context.WithCancel(c.ctx)
	s := &sender{
		id: id, c: c, cancel: cancel, done: make(chan struct{}),
		client: &protocol.Client{Addr: addr, ClientID: "ktool-controller", Dial: c.cfg.Dial},
		wake:   make(chan struct{}, 1),
		idle:   make(chan struct{}), idleClosed: true,
	}
	close(s.idle)
	go s.run(ctx)
	return s
}

func (s *sender) addr() string { return s.client.Addr }

func (s *sender) stop() {
	s.cancel()
	<-s.done
	s.client.Close()
}

func (s *sender) drained() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idle
}

func (s *sender) send(req kmsg.Request) {
	s.mu.Lock()
	if s.idleClosed {
		s.idle, s.idleClosed = make(chan struct{}), false
	}
	um, isUM := req.(*kmsg.UpdateMetadataRequest)
	if n := len(s.queue); isUM && n > 0 {
		if last, ok := s.queue[n-1].(*kmsg.UpdateMetadataRequest); ok {
			s.queue[n-1] = mergeMetadata(last, um)
			s.mu.Unlock()
			return
		}
	}
	s.queue = append(s.queue, req)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// next takes the oldest queued request, or nil once everything queued has
// been delivered (the one taken before included).
func (s *sender) next() kmsg.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		if !s.idleClosed {
			close(s.idle)
			s.idleClosed = true
		}
		return nil
	}
	req := s.queue[0]
	s.queue[0] = nil
	s.queue = s.queue[1:]
	return req
}

func (s *sender) run(ctx context.Context) {
	defer close(s.done)
	for {
		req := s.next()
		if req == nil {
			select {
			case <-ctx.Done():
				return
			case <-s.wake:
			}
			continue
		}
		backoff := 50 * time.Millisecond
		for ctx.Err() == nil {
			rctx, cancel := context.WithTimeout(ctx, s.c.cfg.RequestTimeout)
			resp, err := s.client.Request(rctx, req)
			cancel()
			if err == nil {
				s.check(req, resp)
				break
			}
			s.c.log.Debug("controller request failed; retrying", "broker", s.id, "api", kmsg.NameForKey(req.Key()), "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 2*time.Second)
		}
	}
}

func (s *sender) check(req kmsg.Request, resp kmsg.Response) {
	var code int16
	switch r := resp.(type) {
	case *kmsg.LeaderAndISRResponse:
		code = r.ErrorCode
		s.c.storageErrors(s.id, req.(*kmsg.LeaderAndISRRequest).BrokerEpoch, r)
	case *kmsg.UpdateMetadataResponse:
		code = r.ErrorCode
	case *kmsg.StopReplicaResponse:
		code = r.ErrorCode
	}
	if err := kerr.ErrorForCode(code); err != nil {
		s.c.log.Warn("broker refused controller request", "broker", s.id, "api", kmsg.NameForKey(req.Key()), "err", err)
		if um, ok := req.(*kmsg.UpdateMetadataRequest); ok {
			// It missed changes: its next UpdateMetadata is the full view.
			s.c.enqueue(func() {
				if b, ok := s.c.brokers[s.id]; ok && b.Epoch == um.BrokerEpoch {
					delete(s.c.umFull, s.id)
				}
			})
		}
	}
}

// sendLeaderAndIsr tells the replicas of tps (only those in `to`, when given)
// their partitions' leader, epoch and ISR.
func (c *Controller) sendLeaderAndIsr(tps []TP, to []int32) { c.leaderAndIsr(tps, to, false) }

func (c *Controller) sendLeaderAndIsrNew(tps []TP) { c.leaderAndIsr(tps, nil, true) }

func (c *Controller) leaderAndIsr(tps []TP, to []int32, isNew bool) {
	per := map[int32][]TP{}
	for _, tp := range tps {
		st, ok := c.states[tp]
		if !ok || !st.HasState {
			continue
		}
		for _, r := range st.Replicas {
			if !c.isLive(r) || (to != nil && !slices.Contains(to, r)) {
				continue
			}
			per[r] = append(per[r], tp)
		}
	}
	var leaders []kmsg.LeaderAndISRRequestLiveLeader
	for id := range c.brokers {
		e, ok := c.interBrokerEndpoint(id)
		if !ok {
			continue
		}
		l := kmsg.NewLeaderAndISRRequestLiveLeader()
		l.BrokerID, l.Host, l.Port = id, e.Host, e.Port
		leaders = append(leaders, l)
	}
	for b, list := range per {
		s, ok := c.senders[b]
		if !ok {
			continue
		}
		req := kmsg.NewPtrLeaderAndISRRequest()
		req.SetVersion(4)
		req.ControllerID = c.cfg.BrokerID
		req.ControllerEpoch = c.epoch
		req.BrokerEpoch = c.brokers[b].Epoch
		idx := map[string]int{}
		for _, tp := range list {
			st := c.states[tp]
			i, ok := idx[tp.Topic]
			if !ok {
				ts := kmsg.NewLeaderAndISRRequestTopicState()
				ts.Topic = tp.Topic
				ts.TopicID = c.topicID(tp.Topic)
				req.TopicStates = append(req.TopicStates, ts)
				i = len(req.TopicStates) - 1
				idx[tp.Topic] = i
			}
			p := kmsg.NewLeaderAndISRRequestTopicPartition()
			p.Topic, p.Partition = tp.Topic, tp.Partition
			p.ControllerEpoch = st.ControllerEpoch
			p.Leader, p.LeaderEpoch = st.Leader, st.LeaderEpoch
			p.ISR = slices.Clone(st.ISR)
			p.ZKVersion = st.ZkVersion
			p.Replicas = slices.Clone(st.Replicas)
			p.IsNew = isNew
			req.TopicStates[i].PartitionStates = append(req.TopicStates[i].PartitionStates, p)
		}
		req.LiveLeaders = leaders
		c.withToken(&req.UnknownTags)
		s.send(req)
	}
}

// Incremental UpdateMetadata, as Kafka's controller sends it: a broker's
// first UpdateMetadata from this controller (for this registration of it) is
// the full view, every later one the partitions that changed since the last
// one sent, with the live brokers always in full. A partition that left the
// view (its topic deleted, or being deleted) is sent once with leader -2
// (Kafka's LeaderDuringDelete), which brokers take as "drop it".

// leaderDuringDelete marks a partition that left the view.
const leaderDuringDelete = -2

// umPartition is a partition as UpdateMetadata last described it.
type umPartition struct {
	controllerEpoch, leader, leaderEpoch, zkVersion int32
	isr, replicas, offline                          []int32
}

func (a umPartition) equal(b umPartition) bool {
	return a.controllerEpoch == b.controllerEpoch && a.leader == b.leader && a.leaderEpoch == b.leaderEpoch &&
		a.zkVersion == b.zkVersion && slices.Equal(a.isr, b.isr) && slices.Equal(a.replicas, b.replicas) &&
		slices.Equal(a.offline, b.offline)
}

// metadataView is every partition the brokers are told of, as they are told.
func (c *Controller) metadataView() map[TP]umPartition {
	view := make(map[TP]umPartition, len(c.states))
	for tp, st := range c.states {
		if c.deleting[tp.Topic] {
			continue
		}
		p := umPartition{controllerEpoch: st.ControllerEpoch, leader: st.Leader, leaderEpoch: st.LeaderEpoch,
			zkVersion: st.ZkVersion, isr: st.ISR, replicas: st.Replicas}
		for _, r := range st.Replicas {
			if !c.isLive(r) || c.offlineReplicas[r][tp] {
				p.offline = append(p.offline, r)
			}
		}
		if !st.HasState {
			p.leader, p.leaderEpoch = -1, -1
		}
		view[tp] = p
	}
	return view
}

// sendUpdateMetadata tells every live broker what changed since the last
// UpdateMetadata: the full view to a broker that has not had it yet, the
// changed partitions to the others (nothing when nothing changed, the live
// brokers included).
func (c *Controller) sendUpdateMetadata() {
	var live []kmsg.UpdateMetadataRequestLiveBroker
	for id, info := range c.brokers {
		lb := kmsg.NewUpdateMetadataRequestLiveBroker()
		lb.ID, lb.Host, lb.Port = id, info.Host, info.Port
		for _, e := range info.Endpoints {
			ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
			ep.Host, ep.Port, ep.ListenerName, ep.SecurityProtocol = e.Host, e.Port, e.Listener, securityProtocolID(e.SecurityProtocol)
			lb.Endpoints = append(lb.Endpoints, ep)
		}
		if info.Rack != "" {
			r := info.Rack
			lb.Rack = &r
		}
		live = append(live, lb)
	}
	slices.SortFunc(live, func(a, b kmsg.UpdateMetadataRequestLiveBroker) int { return int(a.ID) - int(b.ID) })
	brokersKey := fmt.Sprint(live)
	view := c.metadataView()
	var changed []TP
	for tp, p := range view {
		if old, ok := c.umSent[tp]; !ok || !old.equal(p) {
			changed = append(changed, tp)
		}
	}
	for tp := range c.umSent {
		if _, ok := view[tp]; !ok {
			changed = append(changed, tp)
		}
	}
	sortTPs(changed)
	delta := c.metadataTopics(changed, view)
	var full []kmsg.UpdateMetadataRequestTopicState
	c.umSent = view
	sameBrokers := brokersKey == c.umBrokers
	c.umBrokers = brokersKey
	for id, s := range c.senders {
		topics := delta
		if c.umFull[id] != c.brokers[id].Epoch {
			if full == nil {
				full = c.metadataTopics(c.allPartitions(), view)
			}
			topics = full
			c.umFull[id] = c.brokers[id].Epoch
		} else if len(changed) == 0 && sameBrokers {
			continue
		}
		req := kmsg.NewPtrUpdateMetadataRequest()
		// v7 is the first to carry topic ids; brokers answer Metadata v10+ with them.
		req.SetVersion(7)
		req.ControllerID = c.cfg.BrokerID
		req.ControllerEpoch = c.epoch
		req.BrokerEpoch = c.brokers[id].Epoch
		req.LiveBrokers = live
		req.TopicStates = topics
		c.withToken(&req.UnknownTags)
		s.send(req)
	}
}

// metadataTopics describes tps (sorted) as UpdateMetadata topic states; a
// partition missing from view is marked deleted.
func (c *Controller) metadataTopics(tps []TP, view map[TP]umPartition) []kmsg.UpdateMetadataRequestTopicState {
	var topics []kmsg.UpdateMetadataRequestTopicState
	for _, tp := range tps {
		if n := len(topics); n == 0 || topics[n-1].Topic != tp.Topic {
			ts := kmsg.NewUpdateMetadataRequestTopicState()
			ts.Topic = tp.Topic
			ts.TopicID = c.topicID(tp.Topic)
			topics = append(topics, ts)
		}
		p := kmsg.NewUpdateMetadataRequestTopicPartition()
		p.Topic, p.Partition = tp.Topic, tp.Partition
		v, ok := view[tp]
		if !ok {
			p.Leader, p.LeaderEpoch = leaderDuringDelete, -1
			p.ControllerEpoch = c.epoch
		} else {
			p.ControllerEpoch = v.controllerEpoch
			p.Leader, p.LeaderEpoch = v.leader, v.leaderEpoch
			p.ISR = slices.Clone(v.isr)
			p.ZKVersion = v.zkVersion
			p.Replicas = slices.Clone(v.replicas)
			p.OfflineReplicas = slices.Clone(v.offline)
		}
		t := &topics[len(topics)-1]
		t.PartitionStates = append(t.PartitionStates, p)
	}
	return topics
}

// mergeMetadata folds a newer UpdateMetadata into an older one still queued:
// the newer live brokers and epochs, the older partitions it does not name.
func mergeMetadata(old, newer *kmsg.UpdateMetadataRequest) *kmsg.UpdateMetadataRequest {
	named := map[TP]bool{}
	for _, t := range newer.TopicStates {
		for _, p := range t.PartitionStates {
			named[TP{t.Topic, p.Partition}] = true
		}
	}
	out := *newer
	out.TopicStates = nil
	add := func(t kmsg.UpdateMetadataRequestTopicState, p kmsg.UpdateMetadataRequestTopicPartition) {
		if n := len(out.TopicStates); n == 0 || out.TopicStates[n-1].Topic != t.Topic {
			ts := kmsg.NewUpdateMetadataRequestTopicState()
			ts.Topic, ts.TopicID = t.Topic, t.TopicID
			out.TopicStates = append(out.TopicStates, ts)
		}
		ts := &out.TopicStates[len(out.TopicStates)-1]
		ts.PartitionStates = append(ts.PartitionStates, p)
	}
	for _, t := range old.TopicStates {
		for _, p := range t.PartitionStates {
			if !named[TP{t.Topic, p.Partition}] {
				add(t, p)
			}
		}
	}
	for _, t := range newer.TopicStates {
		for _, p := range t.PartitionStates {
			add(t, p)
		}
	}
	return &out
}

func sortTPs(tps []TP) {
	slices.SortFunc(tps, func(a, b TP) int {
		if a.Topic != b.Topic {
			return strings.Compare(a.Topic, b.Topic)
		}
		return int(a.Partition) - int(b.Partition)
	})
}

// sendStopReplica tells broker b to stop replicating tps (and delete them with del).
func (c *Controller) sendStopReplica(b int32, tps []TP, del bool) {
	s, ok := c.senders[b]
	if !ok || len(tps) == 0 {
		return
	}
	req := kmsg.NewPtrStopReplicaRequest()
	req.SetVersion(3)
	req.ControllerID = c.cfg.BrokerID
	req.ControllerEpoch = c.epoch
	req.BrokerEpoch = c.brokers[b].Epoch
	idx := map[string]int{}
	for _, tp := range tps {
		i, ok := idx[tp.Topic]
		if !ok {
			t := kmsg.NewStopReplicaRequestTopic()
			t.Topic = tp.Topic
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			idx[tp.Topic] = i
		}
		ps := kmsg.NewStopReplicaRequestTopicPartitionState()
		ps.Partition = tp.Partition
		ps.LeaderEpoch = -2 // delete regardless of epoch (Kafka's EpochDuringDelete) or stop
		if st, ok := c.states[tp]; ok && !del {
			ps.LeaderEpoch = st.LeaderEpoch
		}
		ps.Delete = del
		req.Topics[i].PartitionStates = append(req.Topics[i].PartitionStates, ps)
	}
	c.withToken(&req.UnknownTags)
	s.send(req)
}

// topicID is a topic's id (KIP-516) as bytes; zero when the topic has none.
func (c *Controller) topicID(topic string) [16]byte {
	var id [16]byte
	raw, err := base64.RawURLEncoding.DecodeString(c.assignments[topic].TopicID)
	if err == nil && len(raw) == 16 {
		copy(id[:], raw)
	}
	return id
}

// securityProtocolID numbers a security protocol as UpdateMetadata does.
func securityProtocolID(p string) int16 {
	switch p {
	case zkdata.ProtocolSSL:
		return 1
	case zkdata.ProtocolSASLPlaintext:
		return 2
	case zkdata.ProtocolSASLSSL:
		return 3
	}
	return 0
}
