package broker

// Checks of the controller's requests (LeaderAndIsr, StopReplica, UpdateMetadata)
// against the coordination store. Anyone who can reach a listener can send these
// APIs, so their sender and content are believed only when the store agrees:
//
//   - the controller id and epoch must be those of /controller and
//     /controller_epoch; a higher epoch than the store's fences nobody;
//   - the broker epoch must be this broker's registration (KIP-380);
//   - LeaderAndIsr partition states must match the partition state znodes (leader,
//     leader epoch) and the assignment (replicas, so the ISR names only assigned
//     replicas);
//   - StopReplica deletes a log only of a topic being deleted, gone, or no longer
//     assigned to this broker, and stops a replica only where this broker does
//     not lead;
//   - UpdateMetadata keeps only registered brokers at their registered endpoints,
//     changes a partition's leader only as its state znode says, and drops a
//     topic (left out of a full view, or its partitions marked with leader -2)
//     only once the store has dropped it (or is deleting it).
//
// A request carrying the controller token of its epoch (broker/controller
// token.go) passed the first two checks and is believed without the rest: they
// cost a store read per partition, and a failover at 10,000 partitions sends
// thousands. One without the token, or with another, gets every check; the
// token is compared in constant time and is never logged.
//
// A store that cannot be read makes the check fail with errStoreUnavailable; the
// handler then closes the connection without answering, so the controller's
// sender retries instead of taking a refusal for an answer.

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/controller"
	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/broker/replica"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

var errStoreUnavailable = errors.New("the coordination store could not be read to check a controller request")

// controllerLag is how long a controller epoch above the store's is re-read before
// it is refused: the broker's session may lag the controller's write a little.
const controllerLag = time.Second

// verifiedController caches the last controller id and epoch the store confirmed.
type verifiedController struct {
	mu    sync.Mutex
	id    int32
	epoch int32
	ok    bool
}

// fenceControllerRequest is the common gate of the three controller APIs: the
// sender must be the store's controller at the store's epoch, the request meant
// for this incarnation of the broker (brokerEpoch is -1 for versions without
// one) and, when checkController, not older than the newest controller seen.
// trusted reports whether the request's tags carry that controller's token.
func (b *Broker) fenceControllerRequest(ctx context.Context, controllerID, controllerEpoch int32, brokerEpoch int64, checkController bool, tags *kmsg.Tags) (trusted bool, err error) {
	if err := b.verifyController(ctx, controllerID, controllerEpoch); err != nil {
		return false, err
	}
	if err := b.verifyBrokerEpoch(ctx, brokerEpoch); err != nil {
		return false, err
	}
	if checkController {
		if err := b.replicas.CheckControllerEpoch(controllerEpoch); err != nil {
			return false, err
		}
	}
	return b.carriesToken(ctx, controllerEpoch, tags), nil
}

// tokenCache is the controller token of the newest controller epoch read.
type tokenCache struct {
	mu    sync.Mutex
	epoch int32
	token []byte
}

// carriesToken reports whether tags hold the token the store has for the
// controller at epoch, which verifyController confirmed is the store's. The
// token is read once per epoch; a store that cannot be read, or holds another
// epoch's token (a controller of an older version writes none), makes the
// request go through every check instead.
func (b *Broker) carriesToken(ctx context.Context, epoch int32, tags *kmsg.Tags) bool {
	var got []byte
	tags.Each(func(key uint32, val []byte) {
		if key == controller.TokenTag {
			got = val
		}
	})
	if len(got) != zkdata.ControllerTokenBytes {
		return false
	}
	c := &b.ctrlToken
	c.mu.Lock()
	token := c.token
	if c.epoch != epoch {
		token = nil
	}
	c.mu.Unlock()
	if token == nil {
		data, _, err := b.Store().Get(ctx, zkdata.ControllerTokenPath)
		if err != nil {
			return false
		}
		t, err := zkdata.DecodeControllerToken(data)
		if err != nil || t.Epoch != epoch {
			return false
		}
		c.mu.Lock()
		if t.Epoch >= c.epoch || c.token == nil {
			c.epoch, c.token = t.Epoch, t.Token
		}
		c.mu.Unlock()
		token = t.Token
	}
	return subtle.ConstantTimeCompare(got, token) == 1
}

// refuseControllerRequest answers a request that failed its check: with the
// error, or, when the store could not be read, by closing the connection so the
// controller retries.
func (b *Broker) refuseControllerRequest(rc *reqCtx, err error, resp kmsg.Response, setCode func(int16), respond func(protocol.Response)) {
	if errors.Is(err, errStoreUnavailable) {
		b.logger.Warn("cannot check a controller request; closing its connection so it is retried", "err", err)
		rc.conn.Close()
		respond(protocol.Response{None: true})
		return
	}
	b.logger.Warn("refusing a controller request", "api", kmsg.NameForKey(rc.header.Key),
		"remote", rc.conn.RemoteAddr().String(), "err", err)
	setCode(errorCode(err))
	respond(protocol.Response{Msg: resp})
}

// epochIf is the request's broker epoch when its version carries one, else -1.
func epochIf(version, since int16, epoch int64) int64 {
	if version < since {
		return -1
	}
	return epoch
}

func (b *Broker) verifyController(ctx context.Context, id, epoch int32) error {
	v := &b.ctrlSeen
	v.mu.Lock()
	known := v.ok && v.id == id && v.epoch == epoch
	v.mu.Unlock()
	if known {
		return nil
	}
	deadline := time.Now().Add(controllerLag)
	for {
		sid, sepoch, err := b.storeController(ctx)
		if err != nil {
			return err
		}
		switch {
		case epoch < sepoch:
			return fmt.Errorf("%w: controller epoch %d is older than the store's %d", kerr.StaleControllerEpoch, epoch, sepoch)
		case epoch == sepoch && id == sid:
			v.mu.Lock()
			v.id, v.epoch, v.ok = id, epoch, true
			v.mu.Unlock()
			return nil
		case epoch == sepoch:
			return fmt.Errorf("%w: controller epoch %d belongs to broker %d, not %d", kerr.StaleControllerEpoch, epoch, sid, id)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: controller epoch %d is above the store's %d", kerr.StaleControllerEpoch, epoch, sepoch)
		}
		select {
		case <-ctx.Done():
			return errStoreUnavailable
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// storeController reads /controller_epoch, then /controller: the epoch is written
// after /controller is created, so the controller read is at least as new.
// No /controller is controller -1.
func (b *Broker) storeController(ctx context.Context) (int32, int32, error) {
	s := b.Store()
	data, _, err := s.Get(ctx, zkdata.ControllerEpochPath)
	if errors.Is(err, coord.ErrNoNode) {
		return -1, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %v", errStoreUnavailable, err)
	}
	epoch, err := zkdata.DecodeControllerEpoch(data)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %v", errStoreUnavailable, err)
	}
	data, _, err = s.Get(ctx, zkdata.ControllerPath)
	if errors.Is(err, coord.ErrNoNode) {
		return -1, epoch, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %v", errStoreUnavailable, err)
	}
	ci, err := zkdata.DecodeController(data)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %v", errStoreUnavailable, err)
	}
	return ci.BrokerID, epoch, nil
}

// verifyBrokerEpoch refuses a request for another incarnation of this broker
// (KIP-380). Until this process has registered, every controller request is
// for an earlier one: a restarted broker whose previous session still holds
// /brokers/ids/N must not act on LeaderAndIsr or UpdateMetadata meant for the
// process that was killed (Kafka serves no request before it registers). An
// epoch above the one recorded is checked against the registration itself,
// which must be this session's (it may have just been re-created after a
// session expiry).
func (b *Broker) verifyBrokerEpoch(ctx context.Context, epoch int64) error {
	cur := b.brokerEpoch()
	switch {
	case cur <= 0:
		return fmt.Errorf("%w: this broker is not registered yet (a request for its previous incarnation)", kerr.StaleBrokerEpoch)
	case epoch < 0 || epoch == cur:
		return nil
	case epoch < cur:
		return fmt.Errorf("%w: broker epoch %d, this broker's is %d", kerr.StaleBrokerEpoch, epoch, cur)
	}
	s := b.Store()
	_, st, err := s.Get(ctx, zkdata.BrokerPath(b.id))
	if err != nil && !errors.Is(err, coord.ErrNoNode) {
		return fmt.Errorf("%w: %v", errStoreUnavailable, err)
	}
	if err == nil && st.Czxid == epoch && st.EphemeralOwner == s.SessionID() {
		return nil
	}
	return fmt.Errorf("%w: broker epoch %d is not this broker's registration (%d)", kerr.StaleBrokerEpoch, epoch, cur)
}

// topicsInStore reads assignments once per topic for one request, with the
// topic znode's creation zxid: which incarnation of the name it is.
type topicsInStore struct {
	b  *Broker
	as map[string]topicInStore
}

type topicInStore struct {
	a     *zkdata.TopicAssignment // nil: no such topic
	czxid int64
}

func newTopicsInStore(b *Broker) *topicsInStore {
	return &topicsInStore{b: b, as: map[string]topicInStore{}}
}

func (t *topicsInStore) get(ctx context.Context, topic string) (topicInStore, error) {
	if ts, ok := t.as[topic]; ok {
		return ts, nil
	}
	data, st, err := t.b.Store().Get(ctx, zkdata.TopicPath(topic))
	if errors.Is(err, coord.ErrNoNode) {
		t.as[topic] = topicInStore{}
		return topicInStore{}, nil
	}
	if err != nil {
		return topicInStore{}, fmt.Errorf("%w: %v", errStoreUnavailable, err)
	}
	a, err := zkdata.DecodeTopicAssignment(data)
	if err != nil {
		return topicInStore{}, fmt.Errorf("%w: %v", errStoreUnavailable, err)
	}
	ts := topicInStore{a: &a, czxid: st.Czxid}
	t.as[topic] = ts
	return ts, nil
}

// incarnations remembers, per hosted partition, the creation zxid of the topic
// znode its accepted LeaderAndIsr was checked against, so a StopReplica meant
// for a deleted topic is told apart from the same name created again.
type incarnations struct {
	mu sync.Mutex
	m  map[replica.TP]int64
}

func (in *incarnations) set(tp replica.TP, czxid int64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.m == nil {
		in.m = map[replica.TP]int64{}
	}
	in.m[tp] = czxid
}

func (in *incarnations) get(tp replica.TP) (int64, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	z, ok := in.m[tp]
	return z, ok
}

func (in *incarnations) forget(tp replica.TP) {
	in.mu.Lock()
	defer in.mu.Unlock()
	delete(in.m, tp)
}

// assigned is every replica the store lists for tp: the assignment and any
// reassignment's adding and removing replicas.
func assigned(a *zkdata.TopicAssignment, p int32) []int32 {
	out := slices.Clone(a.Partitions[p])
	for _, r := range append(slices.Clone(a.Adding[p]), a.Removing[p]...) {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// verifyLeaderAndIsr checks each partition state against the store and returns
// the refusals; refused partitions are not applied. The topics are read once
// each, then the partition state znodes storeReads at a time: a LeaderAndIsr
// naming 10,000 partitions costs a pipeline of reads, not 10,000 round trips
// one after the other. A trusted request (carrying the controller token) is
// checked against the assignments only, with no partition state read.
func (b *Broker) verifyLeaderAndIsr(ctx context.Context, updates []replica.LeaderUpdate, trusted bool) (map[replica.TP]error, error) {
	topics := newTopicsInStore(b)
	for _, u := range updates {
		if validateTopicName(u.TP.Topic) == nil && u.TP.Partition >= 0 {
			if _, err := topics.get(ctx, u.TP.Topic); err != nil {
				return nil, err
			}
		}
	}
	refusals := make([]error, len(updates))
	fatals := make([]error, len(updates))
	workers := storeReads
	if trusted {
		workers = 1 // no store reads to overlap
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(updates)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				refusals[i], fatals[i] = b.verifyPartitionState(ctx, topics, updates[i], trusted)
			}
		}()
	}
	for i := range updates {
		work <- i
	}
	close(work)
	wg.Wait()
	for _, err := range fatals {
		if err != nil {
			return nil, err
		}
	}
	refused := map[replica.TP]error{}
	for i, u := range updates {
		if err := refusals[i]; err != nil {
			b.logger.Warn("refusing a LeaderAndIsr partition state the store does not hold",
				"partition", u.TP.String(), "err", err)
			refused[u.TP] = err
			continue
		}
		b.incarnations.set(u.TP, topics.as[u.TP.Topic].czxid)
	}
	return refused, nil
}

// storeReads is how many store reads one controller request's check keeps in
// flight. A failover at 10,000 partitions sends each broker a LeaderAndIsr of
// thousands; reads this deep keep ZooKeeper's connection busy instead of
// paying a round trip per 32 of them on a loaded machine.
const storeReads = 256

func (b *Broker) verifyPartitionState(ctx context.Context, topics *topicsInStore, u replica.LeaderUpdate, trusted bool) (refusal, fatal error) {
	if err := validateTopicName(u.TP.Topic); err != nil {
		return err, nil
	}
	if u.TP.Partition < 0 {
		return fmt.Errorf("%w: partition %d", kerr.UnknownTopicOrPartition, u.TP.Partition), nil
	}
	ts, err := topics.get(ctx, u.TP.Topic)
	if err != nil {
		return nil, err
	}
	a := ts.a
	if a == nil || a.Partitions[u.TP.Partition] == nil {
		return fmt.Errorf("%w: the store has no assignment for it", kerr.UnknownTopicOrPartition), nil
	}
	all := assigned(a, u.TP.Partition)
	st := u.State
	for _, r := range st.Replicas {
		if !slices.Contains(all, r) {
			return fmt.Errorf("%w: replica %d is not assigned (store: %v)", kerr.InvalidRequest, r, all), nil
		}
	}
	for _, r := range st.ISR {
		if !slices.Contains(st.Replicas, r) {
			return fmt.Errorf("%w: ISR member %d is not a replica", kerr.InvalidRequest, r), nil
		}
	}
	if trusted {
		return nil, nil
	}
	b.checkReads.Add(1)
	data, stat, err := b.Store().Get(ctx, zkdata.PartitionStatePath(u.TP.Topic, u.TP.Partition))
	if errors.Is(err, coord.ErrNoNode) {
		return fmt.Errorf("%w: the store has no state for it", kerr.UnknownTopicOrPartition), nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errStoreUnavailable, err)
	}
	li, err := zkdata.DecodeLeaderIsr(data, stat.Version)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errStoreUnavailable, err)
	}
	switch {
	case st.LeaderEpoch < li.LeaderEpoch:
		return fmt.Errorf("%w: leader epoch %d, the store has %d", kerr.StaleControllerEpoch, st.LeaderEpoch, li.LeaderEpoch), nil
	case st.LeaderEpoch != li.LeaderEpoch || st.Leader != li.Leader:
		return fmt.Errorf("%w: leader %d epoch %d, the store has leader %d epoch %d",
			kerr.InvalidRequest, st.Leader, st.LeaderEpoch, li.Leader, li.LeaderEpoch), nil
	case st.ZkVersion > li.ZkVersion:
		return fmt.Errorf("%w: state version %d, the store's is %d", kerr.InvalidRequest, st.ZkVersion, li.ZkVersion), nil
	case st.ZkVersion == li.ZkVersion && !sameSet(st.ISR, li.ISR):
		return fmt.Errorf("%w: ISR %v, the store has %v", kerr.InvalidRequest, st.ISR, li.ISR), nil
	}
	return nil, nil
}

func sameSet(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// verifyStopDelete allows StopReplica to delete tp's log only when the store no
// longer wants it here: the topic is being deleted or is gone (or was created
// again since this broker's log was made for it), or this broker is not among
// the partition's replicas any more.
func (b *Broker) verifyStopDelete(ctx context.Context, topics *topicsInStore, tp replica.TP) (refusal, fatal error) {
	b.checkReads.Add(1)
	ok, _, err := b.Store().Exists(ctx, zkdata.DeleteTopicPath(tp.Topic))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errStoreUnavailable, err)
	}
	if ok {
		return nil, nil
	}
	ts, err := topics.get(ctx, tp.Topic)
	if err != nil {
		return nil, err
	}
	if ts.a == nil || !slices.Contains(assigned(ts.a, tp.Partition), b.id) {
		return nil, nil
	}
	if z, ok := b.incarnations.get(tp); ok && z != ts.czxid {
		return nil, nil // the log is of an earlier topic of that name
	}
	return fmt.Errorf("%w: the store still assigns %s to this broker and is not deleting it", kerr.InvalidRequest, tp), nil
}

// verifyStopFollow allows StopReplica without delete (a controlled shutdown
// stopping this broker's followers) only for partitions the store does not have
// this broker lead: the controller moves leadership away before it sends it.
func (b *Broker) verifyStopFollow(ctx context.Context, tp replica.TP) (refusal, fatal error) {
	b.checkReads.Add(1)
	data, st, err := b.Store().Get(ctx, zkdata.PartitionStatePath(tp.Topic, tp.Partition))
	if errors.Is(err, coord.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errStoreUnavailable, err)
	}
	li, err := zkdata.DecodeLeaderIsr(data, st.Version)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errStoreUnavailable, err)
	}
	if li.Leader == b.id {
		return fmt.Errorf("%w: the store has this broker lead %s", kerr.InvalidRequest, tp), nil
	}
	return nil, nil
}

// verifyUpdateMetadata keeps only the live brokers registered at the endpoints
// the request names (a broker that just left or moved is dropped, as is one that
// never registered), and refuses a request that drops a topic the store still
// holds and is not deleting (metaCache.dropped says which it would). A trusted
// request's partitions are taken as they are (verifyChangedPartitions reads
// the state of each partition whose leader it changes).
func (b *Broker) verifyUpdateMetadata(ctx context.Context, req *kmsg.UpdateMetadataRequest, trusted bool) error {
	s := b.Store()
	live := req.LiveBrokers[:0:0]
	for _, lb := range req.LiveBrokers {
		data, _, err := s.Get(ctx, zkdata.BrokerPath(lb.ID))
		if errors.Is(err, coord.ErrNoNode) {
			b.logger.Warn("UpdateMetadata names an unregistered broker; leaving it out", "broker", lb.ID)
			continue
		}
		if err != nil {
			return fmt.Errorf("%w: %v", errStoreUnavailable, err)
		}
		info, err := zkdata.DecodeBrokerInfo(lb.ID, data)
		if err != nil {
			return fmt.Errorf("%w: %v", errStoreUnavailable, err)
		}
		// v0 names one host and port; later versions list endpoints instead.
		ok := req.GetVersion() > 0 || registeredEndpoint(info, lb.Host, lb.Port)
		for _, ep := range lb.Endpoints {
			ok = ok && registeredEndpoint(info, ep.Host, ep.Port)
		}
		if !ok {
			b.logger.Warn("UpdateMetadata names a broker at an endpoint it did not register; leaving it out", "broker", lb.ID)
			continue
		}
		live = append(live, lb)
	}
	req.LiveBrokers = live
	if !trusted {
		if err := b.verifyChangedPartitions(ctx, req); err != nil {
			return err
		}
	}
	named := map[string]bool{}
	check := func(topic string) error {
		if named[topic] {
			return nil
		}
		named[topic] = true
		return validateTopicName(topic)
	}
	for _, p := range req.PartitionStates {
		if err := check(p.Topic); err != nil {
			return err
		}
	}
	for _, t := range req.TopicStates {
		if err := check(t.Topic); err != nil {
			return err
		}
	}
	for _, t := range b.meta.dropped(req) {
		deleting, _, err := s.Exists(ctx, zkdata.DeleteTopicPath(t))
		if err != nil {
			return fmt.Errorf("%w: %v", errStoreUnavailable, err)
		}
		if deleting {
			continue
		}
		exists, _, err := s.Exists(ctx, zkdata.TopicPath(t))
		if err != nil {
			return fmt.Errorf("%w: %v", errStoreUnavailable, err)
		}
		if exists {
			return fmt.Errorf("%w: topic %s is dropped but the store still holds it", kerr.InvalidRequest, t)
		}
	}
	return nil
}

func registeredEndpoint(info zkdata.BrokerInfo, host string, port int32) bool {
	if info.Host == host && info.Port == port {
		return true
	}
	for _, e := range info.Endpoints {
		if e.Host == host && e.Port == port {
			return true
		}
	}
	return false
}

// verifyRegistration checks that epoch is broker id's registration as the store
// has it: the czxid of /brokers/ids/<id>.
func (b *Broker) verifyRegistration(ctx context.Context, id int32, epoch int64) error {
	_, st, err := b.Store().Get(ctx, zkdata.BrokerPath(id))
	if errors.Is(err, coord.ErrNoNode) {
		return fmt.Errorf("%w: broker %d is not registered", kerr.BrokerNotAvailable, id)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err)
	}
	if st.Czxid != epoch {
		return fmt.Errorf("%w: broker %d's epoch is %d, not %d", kerr.StaleBrokerEpoch, id, st.Czxid, epoch)
	}
	return nil
}

// hostsVerified reports whether this broker hosts the partition at that
// leader and leader epoch: its replica state came from a LeaderAndIsr that
// verifyLeaderAndIsr checked against the store, so an UpdateMetadata saying
// the same needs no store read. After a failover the controller sends both
// for thousands of partitions, and every broker of an RF=3 cluster of three
// hosts all of them.
func (b *Broker) hostsVerified(topic string, partition, leader, epoch int32) bool {
	p := b.replicas.Get(replica.TP{Topic: topic, Partition: partition})
	if p == nil {
		return false
	}
	l, e := p.LeaderAndEpoch()
	return e >= 0 && e == epoch && l == leader
}

// verifyChangedPartitions checks the partitions whose leader or leader epoch an
// UpdateMetadata changes (or adds) against their state znodes, so a forged one
// cannot send clients to the wrong leader. A state older than the store's (a
// lower leader epoch) is the controller's own, overtaken while it was queued
// during a failover: the store's state takes its place, since refusing the
// request would leave a restarted broker without the controller's full view.
// A different leader at the same epoch, or an epoch the store has not reached,
// is refused. Unchanged partitions, and those this broker hosts at the same
// leader and epoch, cost nothing; the reads run storeReads at a time.
func (b *Broker) verifyChangedPartitions(ctx context.Context, req *kmsg.UpdateMetadataRequest) error {
	type change struct {
		topic string
		p     *kmsg.UpdateMetadataRequestTopicPartition
	}
	var changed []change
	add := func(topic string, p *kmsg.UpdateMetadataRequestTopicPartition) {
		if p.Leader == leaderDuringDelete {
			return // a topic dropped: checked against the store by verifyUpdateMetadata
		}
		if pm, ok := b.meta.partition(topic, p.Partition); ok && pm.Leader == p.Leader && pm.LeaderEpoch == p.LeaderEpoch {
			return
		}
		if b.hostsVerified(topic, p.Partition, p.Leader, p.LeaderEpoch) {
			return
		}
		changed = append(changed, change{topic, p})
	}
	for i := range req.PartitionStates {
		add(req.PartitionStates[i].Topic, &req.PartitionStates[i])
	}
	for i := range req.TopicStates {
		t := &req.TopicStates[i]
		for j := range t.PartitionStates {
			add(t.Topic, &t.PartitionStates[j])
		}
	}
	errs := make([]error, len(changed))
	sem := make(chan struct{}, storeReads)
	var wg sync.WaitGroup
	for i, c := range changed {
		if validateTopicName(c.topic) != nil || c.p.Partition < 0 {
			errs[i] = fmt.Errorf("%w: partition %s-%d", kerr.InvalidRequest, c.topic, c.p.Partition)
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			b.checkReads.Add(1)
			data, st, err := b.Store().Get(ctx, zkdata.PartitionStatePath(c.topic, c.p.Partition))
			switch {
			case errors.Is(err, coord.ErrNoNode):
				if c.p.Leader != -1 || c.p.LeaderEpoch != -1 {
					errs[i] = fmt.Errorf("%w: %s-%d has no state in the store", kerr.InvalidRequest, c.topic, c.p.Partition)
				}
				return
			case err != nil:
				errs[i] = fmt.Errorf("%w: %v", errStoreUnavailable, err)
				return
			}
			li, err := zkdata.DecodeLeaderIsr(data, st.Version)
			if err != nil {
				errs[i] = fmt.Errorf("%w: %v", errStoreUnavailable, err)
				return
			}
			switch {
			case li.LeaderEpoch > c.p.LeaderEpoch:
				c.p.Leader, c.p.LeaderEpoch, c.p.ISR, c.p.ZKVersion = li.Leader, li.LeaderEpoch, li.ISR, li.ZkVersion
				c.p.ControllerEpoch = li.ControllerEpoch
			case li.Leader != c.p.Leader || li.LeaderEpoch != c.p.LeaderEpoch:
				errs[i] = fmt.Errorf("%w: %s-%d leader %d epoch %d, the store has leader %d epoch %d", kerr.InvalidRequest,
					c.topic, c.p.Partition, c.p.Leader, c.p.LeaderEpoch, li.Leader, li.LeaderEpoch)
			}
		}()
	}
	wg.Wait()
	var first error
	refused := 0
	for _, err := range errs {
		if errors.Is(err, errStoreUnavailable) {
			return err
		}
		if err != nil {
			if first == nil {
				first = err
			}
			refused++
		}
	}
	if refused > 1 {
		return fmt.Errorf("%w (and %d more partitions)", first, refused-1)
	}
	return first
}
