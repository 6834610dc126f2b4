package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/broker/coord/zkdata"
)

// TP names a topic partition.
type TP struct {
	Topic     string
	Partition int32
}

func (tp TP) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// PartitionState is what the controller knows of a partition.
type PartitionState struct {
	Replicas []int32
	zkdata.LeaderIsr
	HasState bool // the state znode exists
}

// Controller is the active controller of the cluster.
type Controller struct {
	cfg          Config
	log          *slog.Logger
	store        coord.Store
	epoch        int32
	epochVersion int32

	events chan func()
	ctx    context.Context

	brokers     map[int32]zkdata.BrokerInfo
	assignments map[string]zkdata.TopicAssignment
	states      map[TP]*PartitionState
	deleting    map[string]bool
	shutting    map[int32]bool
	senders     map[int32]*sender

	snapMu sync.RWMutex
	snap   Snapshot
}

// Snapshot is a copy of the controller's view, for inspection.
type Snapshot struct {
	Epoch   int32
	Brokers []int32
	States  map[TP]PartitionState
}

func newController(ctx context.Context, cfg Config, store coord.Store, epoch, epochVersion int32) *Controller {
	return &Controller{
		ctx: ctx,
		cfg: cfg, log: cfg.Logger.With("component", "controller", "controller_epoch", epoch),
		store: store, epoch: epoch, epochVersion: epochVersion,
		events:      make(chan func(), 256),
		brokers:     map[int32]zkdata.BrokerInfo{},
		assignments: map[string]zkdata.TopicAssignment{},
		states:      map[TP]*PartitionState{},
		deleting:    map[string]bool{},
		shutting:    map[int32]bool{},
		senders:     map[int32]*sender{},
	}
}

// Epoch is the controller epoch.
func (c *Controller) Epoch() int32 { return c.epoch }

// Snapshot returns the controller's current view.
func (c *Controller) Snapshot() Snapshot {
	c.snapMu.RLock()
	defer c.snapMu.RUnlock()
	return c.snap
}

func (c *Controller) publish() {
	s := Snapshot{Epoch: c.epoch, States: make(map[TP]PartitionState, len(c.states))}
	for id := range c.brokers {
		s.Brokers = append(s.Brokers, id)
	}
	slices.Sort(s.Brokers)
	for tp, st := range c.states {
		s.States[tp] = *st
	}
	c.snapMu.Lock()
	c.snap = s
	c.snapMu.Unlock()
	if c.cfg.OnStateChange != nil {
		c.cfg.OnStateChange()
	}
}

// enqueue runs f on the event loop.
func (c *Controller) enqueue(f func()) {
	select {
	case c.events <- f:
	case <-c.ctx.Done():
	}
}

// call runs f on the event loop and waits for it.
func (c *Controller) call(ctx context.Context, f func()) error {
	done := make(chan struct{})
	select {
	case c.events <- func() { f(); close(done) }:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.ctx.Done():
		return kerr.NotController
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.ctx.Done():
		return kerr.NotController
	}
}

func (c *Controller) run(ctx context.Context) {
	defer func() {
		for _, s := range c.senders {
			s.stop()
		}
	}()
	if err := c.failover(); err != nil {
		c.log.Error("controller failover failed; resigning", "err", err)
		return
	}
	var tick <-chan time.Time
	if c.cfg.AutoRebalance && c.cfg.ImbalanceCheckInterval > 0 {
		t := time.NewTicker(c.cfg.ImbalanceCheckInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case f := <-c.events:
			c.safely(f)
		case <-tick:
			c.autoRebalance()
		}
		if c.fenced() {
			return
		}
	}
}

// safely runs one event; a bug in one event handler is logged and must not take
// the whole broker down with it.
func (c *Controller) safely(f func()) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("controller event failed", "panic", fmt.Sprint(r))
		}
	}()
	f()
}

// fenced reports whether a newer controller exists (our epoch znode write lost).
func (c *Controller) fenced() bool { return c.ctx.Err() != nil }

// failover loads everything and brings every broker up to date.
func (c *Controller) failover() error {
	ctx := c.ctx
	for _, p := range []string{zkdata.BrokerIDsPath, zkdata.TopicsPath, zkdata.DeleteTopicsPath, zkdata.IsrChangeNotificationPath, "/admin", zkdata.ConfigChangesPath} {
		if _, err := c.store.CreateAll(ctx, p, nil, coord.Persistent); err != nil && !errors.Is(err, coord.ErrNodeExists) {
			return err
		}
	}
	if err := c.loadBrokers(); err != nil {
		return err
	}
	if err := c.loadTopics(); err != nil {
		return err
	}
	for id := range c.brokers {
		c.ensureSender(id)
	}
	// Elect leaders where needed and tell every broker everything.
	c.electOffline(c.allPartitions(), false)
	// Brokers that died while there was no controller leave the ISRs now.
	c.removeDeadFromIsr(c.allPartitions())
	c.sendLeaderAndIsr(c.allPartitions(), nil)
	c.sendUpdateMetadata()
	c.publish()
	c.watchDeletes()
	c.watchIsrChanges()
	c.watchPreferred()
	c.watchReassignZnode()
	c.checkReassignments()
	return nil
}

func (c *Controller) allPartitions() []TP {
	out := make([]TP, 0, len(c.states))
	for tp := range c.states {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// ---- brokers ----

func (c *Controller) loadBrokers() error {
	ids, _, ch, err := c.store.ChildrenW(c.ctx, zkdata.BrokerIDsPath)
	if err != nil {
		return err
	}
	go c.rearm(ch, c.onBrokerChange)
	live := map[int32]zkdata.BrokerInfo{}
	for _, name := range ids {
		var id int32
		if _, err := fmt.Sscan(name, &id); err != nil {
			continue
		}
		data, st, err := c.store.Get(c.ctx, zkdata.BrokerPath(id))
		if errors.Is(err, coord.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		info, err := zkdata.DecodeBrokerInfo(id, data)
		if err != nil {
			c.log.Warn("ignoring unreadable broker registration", "broker", id, "err", err)
			continue
		}
		info.Epoch = st.Czxid
		live[id] = info
	}
	c.brokers = live
	return nil
}

// rearm waits for a one-shot watch and queues handler unless the watch died.
func (c *Controller) rearm(ch <-chan coord.Event, handler func()) {
	select {
	case ev, ok := <-ch:
		if !ok || ev.Err != nil {
			return
		}
		c.enqueue(handler)
	case <-c.ctx.Done():
	}
}

func (c *Controller) onBrokerChange() {
	old := c.brokers
	if err := c.loadBrokers(); err != nil {
		c.log.Error("reading brokers", "err", err)
		return
	}
	var dead, born []int32
	for id, info := range old {
		if n, ok := c.brokers[id]; !ok || n.Epoch != info.Epoch {
			dead = append(dead, id)
		}
	}
	for id, info := range c.brokers {
		if o, ok := old[id]; !ok || o.Epoch != info.Epoch {
			born = append(born, id)
		}
	}
	slices.Sort(dead)
	slices.Sort(born)
	if len(dead) > 0 {
		c.log.Info("brokers failed", "brokers", dead)
		c.onBrokersFailed(dead)
	}
	if len(born) > 0 {
		c.log.Info("brokers started", "brokers", born)
		c.onBrokersStarted(born)
	}
	c.retryDeletes()
	c.publish()
}

func (c *Controller) isLive(id int32) bool {
	_, ok := c.brokers[id]
	return ok
}

func (c *Controller) onBrokersFailed(dead []int32) {
	for _, id := range dead {
		if s, ok := c.senders[id]; ok {
			s.stop()
			delete(c.senders, id)
		}
		delete(c.shutting, id)
	}
	var touched []TP
	for _, tp := range c.allPartitions() {
		st := c.states[tp]
		if c.deleting[tp.Topic] || !st.HasState {
			continue
		}
		hit := false
		for _, d := range dead {
			if st.Leader == d || slices.Contains(st.ISR, d) {
				hit = true
			}
		}
		if hit {
			touched = append(touched, tp)
		}
	}
	// New leaders first, so clients are served again as early as possible; the
	// ISR clean-up of partitions that kept their leader follows.
	c.sendLeaderAndIsr(c.electOffline(touched, false), nil)
	c.sendUpdateMetadata()
	c.sendLeaderAndIsr(c.removeDeadFromIsr(touched), nil)
	c.sendUpdateMetadata()
}

// removeDeadFromIsr takes replicas of dead brokers out of the ISR of partitions
// whose leader is live (never shrinking it to nothing), as Kafka's controller does
// for offline replicas, and returns the partitions it changed.
func (c *Controller) removeDeadFromIsr(tps []TP) []TP {
	var changed []TP
	for _, tp := range tps {
		if c.deleting[tp.Topic] || !c.states[tp].HasState {
			continue
		}
		ok := c.update(tp, func(st *PartitionState) (zkdata.LeaderIsr, bool) {
			isr := c.liveOnly(st.ISR)
			if st.Leader < 0 || !c.isLive(st.Leader) || len(isr) == 0 || len(isr) == len(st.ISR) {
				return st.LeaderIsr, false
			}
			nst := st.LeaderIsr
			nst.ISR = isr
			nst.LeaderEpoch++
			return nst, true
		})
		if ok {
			changed = append(changed, tp)
		}
	}
	return changed
}

func (c *Controller) onBrokersStarted(born []int32) {
	for _, id := range born {
		c.ensureSender(id)
	}
	c.sendUpdateMetadata()
	// Tell the new brokers about every partition they host, then elect leaders for
	// partitions that were offline and can now be led.
	var theirs []TP
	for _, tp := range c.allPartitions() {
		st := c.states[tp]
		for _, id := range born {
			if slices.Contains(st.Replicas, id) {
				theirs = append(theirs, tp)
				break
			}
		}
	}
	changed := c.electOffline(theirs, false)
	c.sendLeaderAndIsr(theirs, born)
	c.sendLeaderAndIsr(changed, nil)
	c.sendUpdateMetadata()
}

func (c *Controller) liveOnly(ids []int32) []int32 {
	var out []int32
	for _, id := range ids {
		if c.isLive(id) && !c.shutting[id] {
			out = append(out, id)
		}
	}
	return out
}

// ---- topics ----

func (c *Controller) loadTopics() error {
	names, _, ch, err := c.store.ChildrenW(c.ctx, zkdata.TopicsPath)
	if err != nil {
		return err
	}
	go c.rearm(ch, c.onTopicChange)
	for _, t := range names {
		if _, ok := c.assignments[t]; ok {
			continue
		}
		if err := c.loadTopic(t); err != nil {
			return err
		}
	}
	return nil
}

// loadTopic reads a topic's assignment (with a watch for new partitions) and the
// state of each partition.
func (c *Controller) loadTopic(t string) error {
	data, _, ch, err := c.store.GetW(c.ctx, zkdata.TopicPath(t))
	if errors.Is(err, coord.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	go c.rearm(ch, func() { c.onTopicModified(t) })
	a, err := zkdata.DecodeTopicAssignment(data)
	if err != nil {
		c.log.Warn("ignoring unreadable topic assignment", "topic", t, "err", err)
		return nil
	}
	c.assignments[t] = a
	for p, replicas := range a.Partitions {
		tp := TP{t, p}
		st := &PartitionState{Replicas: replicas, LeaderIsr: zkdata.LeaderIsr{Leader: -1, LeaderEpoch: -1}}
		sdata, sst, err := c.store.Get(c.ctx, zkdata.PartitionStatePath(t, p))
		switch {
		case err == nil:
			li, derr := zkdata.DecodeLeaderIsr(sdata, sst.Version)
			if derr != nil {
				c.log.Warn("unreadable partition state", "partition", tp.String(), "err", derr)
				break
			}
			st.LeaderIsr = li
			st.HasState = true
		case errors.Is(err, coord.ErrNoNode):
		default:
			return err
		}
		c.states[tp] = st
	}
	return nil
}

func (c *Controller) onTopicChange() {
	before := map[string]bool{}
	for t := range c.assignments {
		before[t] = true
	}
	if err := c.loadTopics(); err != nil {
		c.log.Error("reading topics", "err", err)
		return
	}
	var created []TP
	for t := range c.assignments {
		if before[t] {
			continue
		}
		for _, tp := range c.allPartitions() {
			if tp.Topic == t {
				created = append(created, tp)
			}
		}
	}
	// Topics whose znode vanished without a deletion (an operator removed it).
	names, _, err := c.store.Children(c.ctx, zkdata.TopicsPath)
	if err == nil {
		for t := range c.assignments {
			if !slices.Contains(names, t) && !c.deleting[t] {
				c.forgetTopic(t)
			}
		}
	}
	if len(created) > 0 {
		c.log.Info("new partitions", "count", len(created))
		c.onNewPartitions(created)
	}
	c.publish()
}

func (c *Controller) onTopicModified(t string) {
	old := c.assignments[t]
	delete(c.assignments, t)
	if err := c.loadTopic(t); err != nil {
		c.log.Error("reading topic", "topic", t, "err", err)
		c.assignments[t] = old
		return
	}
	var added []TP
	for p := range c.assignments[t].Partitions {
		if _, ok := old.Partitions[p]; !ok {
			added = append(added, TP{t, p})
		}
	}
	if len(added) > 0 {
		c.onNewPartitions(added)
	}
	c.publish()
}

// onNewPartitions writes the initial state of new partitions: the leader is the
// first live replica in AR (the preferred replica when it is up), the ISR the live replicas.
func (c *Controller) onNewPartitions(tps []TP) {
	var ok []TP
	for _, tp := range tps {
		st := c.states[tp]
		if st.HasState {
			ok = append(ok, tp)
			continue
		}
		live := c.liveOnly(st.Replicas)
		if len(live) == 0 {
			c.log.Warn("new partition has no live replica; it stays offline", "partition", tp.String())
			continue
		}
		li := zkdata.LeaderIsr{Leader: live[0], LeaderEpoch: 0, ISR: live, ControllerEpoch: c.epoch}
		if c.createState(tp, li) {
			ok = append(ok, tp)
		}
	}
	c.sendLeaderAndIsrNew(ok)
	c.sendUpdateMetadata()
}

func (c *Controller) forgetTopic(t string) {
	delete(c.assignments, t)
	for tp := range c.states {
		if tp.Topic == t {
			delete(c.states, tp)
		}
	}
}

// ---- state writes (fenced by the controller epoch znode's version) ----

func (c *Controller) createState(tp TP, li zkdata.LeaderIsr) bool {
	path := zkdata.PartitionStatePath(tp.Topic, tp.Partition)
	if _, err := c.store.CreateAll(c.ctx, coord.Parent(path), nil, coord.Persistent); err != nil && !errors.Is(err, coord.ErrNodeExists) {
		c.log.Error("creating partition znode", "partition", tp.String(), "err", err)
		return false
	}
	li.ControllerEpoch = c.epoch
	err := c.store.Multi(c.ctx,
		coord.CheckOp(zkdata.ControllerEpochPath, c.epochVersion),
		coord.CreateOp(path, zkdata.EncodeLeaderIsr(li), coord.Persistent))
	if err != nil {
		c.stateWriteFailed(tp, err)
		return false
	}
	li.ZkVersion = 0
	st := c.states[tp]
	st.LeaderIsr, st.HasState = li, true
	return true
}

func (c *Controller) writeStateErr(tp TP, li zkdata.LeaderIsr) error {
	st := c.states[tp]
	if !st.HasState {
		if c.createState(tp, li) {
			return nil
		}
		return errors.New("creating partition state failed")
	}
	li.ControllerEpoch = c.epoch
	err := c.store.Multi(c.ctx,
		coord.CheckOp(zkdata.ControllerEpochPath, c.epochVersion),
		coord.SetOp(zkdata.PartitionStatePath(tp.Topic, tp.Partition), zkdata.EncodeLeaderIsr(li), st.ZkVersion))
	if err != nil {
		c.stateWriteFailed(tp, err)
		return err
	}
	li.ZkVersion = st.ZkVersion + 1
	st.LeaderIsr = li
	return nil
}

// update computes a partition's new state from its current one and writes it,
// again from a fresh read when a leader changed the ISR meanwhile (a version
// conflict), at most three times. compute returning false means no change.
func (c *Controller) update(tp TP, compute func(st *PartitionState) (zkdata.LeaderIsr, bool)) bool {
	for attempt := 0; attempt < 3; attempt++ {
		nst, ok := compute(c.states[tp])
		if !ok {
			return false
		}
		err := c.writeStateErr(tp, nst)
		if err == nil {
			return true
		}
		var me *coord.MultiError
		if !errors.Is(err, coord.ErrBadVersion) || (errors.As(err, &me) && me.Index == 0) {
			return false
		}
	}
	return false
}

func (c *Controller) stateWriteFailed(tp TP, err error) {
	var me *coord.MultiError
	if errors.As(err, &me) && me.Index == 0 {
		// A newer controller bumped /controller_epoch: this one is a zombie. Its
		// elector sees /controller owned by another session and stops it.
		c.log.Error("controller epoch changed: another controller took over", "err", err)
		return
	}
	if errors.Is(err, coord.ErrBadVersion) {
		// A leader changed the ISR at the same moment: re-read, the caller retries.
		if data, st, gerr := c.store.Get(c.ctx, zkdata.PartitionStatePath(tp.Topic, tp.Partition)); gerr == nil {
			if li, derr := zkdata.DecodeLeaderIsr(data, st.Version); derr == nil {
				c.states[tp].LeaderIsr = li
			}
		}
		c.log.Debug("partition state write lost a version race", "partition", tp.String(), "err", err)
		return
	}
	c.log.Warn("partition state write failed", "partition", tp.String(), "err", err)
}

// ---- elections ----

// electOffline elects leaders for partitions whose leader is not live. With
// unclean (or the topic's unclean.leader.election.enable) a live out-of-sync replica
// may lead when no ISR member is live. Returns the partitions that changed.
func (c *Controller) electOffline(tps []TP, forceUnclean bool) []TP {
	var changed []TP
	for _, tp := range tps {
		st := c.states[tp]
		if c.deleting[tp.Topic] {
			continue
		}
		if !st.HasState {
			live := c.liveOnly(st.Replicas)
			if len(live) > 0 && c.createState(tp, zkdata.LeaderIsr{Leader: live[0], LeaderEpoch: 0, ISR: live}) {
				changed = append(changed, tp)
			}
			continue
		}
		ok := c.update(tp, func(st *PartitionState) (zkdata.LeaderIsr, bool) {
			if st.Leader >= 0 && c.isLive(st.Leader) && !c.shutting[st.Leader] {
				return st.LeaderIsr, false
			}
			return c.offlineElection(tp, st, forceUnclean)
		})
		if ok {
			nst := c.states[tp].LeaderIsr
			changed = append(changed, tp)
			c.log.Info("elected leader", "partition", tp.String(), "leader", nst.Leader,
				"leader_epoch", nst.LeaderEpoch, "isr", nst.ISR)
		}
	}
	return changed
}

func (c *Controller) offlineElection(tp TP, st *PartitionState, forceUnclean bool) (zkdata.LeaderIsr, bool) {
	nst := st.LeaderIsr
	liveISR := c.liveOnly(st.ISR)
	for _, r := range st.Replicas {
		if slices.Contains(liveISR, r) {
			nst.Leader = r
			nst.ISR = liveISR
			nst.LeaderEpoch++
			return nst, true
		}
	}
	if forceUnclean || (c.cfg.Unclean != nil && c.cfg.Unclean(tp.Topic)) {
		if live := c.liveOnly(st.Replicas); len(live) > 0 {
			c.log.Warn("unclean leader election: an out-of-sync replica leads; records may be lost",
				"partition", tp.String(), "leader", live[0])
			nst.Leader = live[0]
			nst.ISR = []int32{live[0]}
			nst.LeaderEpoch++
			return nst, true
		}
	}
	if st.Leader == -1 {
		return nst, false // already offline
	}
	// No eligible replica: the partition goes offline. The ISR keeps its last
	// member(s) so that one of them leads again when it comes back.
	nst.Leader = -1
	nst.LeaderEpoch++
	switch {
	case len(liveISR) > 0:
		nst.ISR = liveISR // members shutting down
	case slices.Contains(st.ISR, st.Leader):
		nst.ISR = []int32{st.Leader} // the last leader has every committed record
	case len(st.ISR) > 1:
		nst.ISR = st.ISR[len(st.ISR)-1:]
	}
	c.log.Warn("partition offline: no live in-sync replica", "partition", tp.String(), "isr", nst.ISR)
	return nst, true
}

// ElectionType is preferred (0) or unclean (1), as in ElectLeaders.
type ElectionType int8

// Election types.
const (
	Preferred ElectionType = 0
	Unclean   ElectionType = 1
)

// ElectLeaders runs a preferred or unclean election for tps (nil: every partition)
// and returns a result per partition: nil, or a kerr error (ELECTION_NOT_NEEDED,
// PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE,
// UNKNOWN_TOPIC_OR_PARTITION).
func (c *Controller) ElectLeaders(ctx context.Context, typ ElectionType, tps []TP) (map[TP]error, error) {
	var out map[TP]error
	err := c.call(ctx, func() { out = c.electLeaders(typ, tps) })
	return out, err
}

func (c *Controller) electLeaders(typ ElectionType, tps []TP) map[TP]error {
	if tps == nil {
		tps = c.allPartitions()
	}
	out := map[TP]error{}
	var changed []TP
	for _, tp := range tps {
		st, ok := c.states[tp]
		if !ok || c.deleting[tp.Topic] {
			out[tp] = kerr.UnknownTopicOrPartition
			continue
		}
		if len(st.Replicas) == 0 {
			out[tp] = kerr.InvalidReplicaAssignment
			continue
		}
		switch typ {
		case Preferred:
			pref := st.Replicas[0]
			if st.Leader == pref {
				out[tp] = kerr.ElectionNotNeeded
				continue
			}
			if !c.isLive(pref) || c.shutting[pref] || !slices.Contains(st.ISR, pref) {
				out[tp] = kerr.PreferredLeaderNotAvailable
				continue
			}
			ok := c.update(tp, func(st *PartitionState) (zkdata.LeaderIsr, bool) {
				if st.Leader == pref || !slices.Contains(st.ISR, pref) {
					return st.LeaderIsr, false
				}
				nst := st.LeaderIsr
				nst.Leader = pref
				nst.LeaderEpoch++
				return nst, true
			})
			if !ok {
				out[tp] = kerr.PreferredLeaderNotAvailable
				continue
			}
			c.log.Info("preferred replica elected", "partition", tp.String(), "leader", pref, "leader_epoch", c.states[tp].LeaderEpoch)
			changed = append(changed, tp)
			out[tp] = nil
		case Unclean:
			if st.Leader >= 0 && c.isLive(st.Leader) {
				out[tp] = kerr.ElectionNotNeeded
				continue
			}
			before := len(changed)
			changed = append(changed, c.electOffline([]TP{tp}, true)...)
			if len(changed) == before || c.states[tp].Leader < 0 {
				out[tp] = kerr.EligibleLeadersNotAvailable
				continue
			}
			out[tp] = nil
		default:
			out[tp] = kerr.InvalidRequest
		}
	}
	c.sendLeaderAndIsr(changed, nil)
	c.sendUpdateMetadata()
	c.publish()
	return out
}

// autoRebalance moves leadership back to preferred replicas on brokers whose
// imbalance (partitions preferring them but led elsewhere, over partitions
// preferring them) exceeds leader.imbalance.per.broker.percentage.
func (c *Controller) autoRebalance() {
	prefer := map[int32][]TP{}
	notLed := map[int32]int{}
	for _, tp := range c.allPartitions() {
		st := c.states[tp]
		if c.deleting[tp.Topic] || len(st.Replicas) == 0 {
			continue
		}
		p := st.Replicas[0]
		prefer[p] = append(prefer[p], tp)
		if st.Leader != p {
			notLed[p]++
		}
	}
	var todo []TP
	for b, tps := range prefer {
		if !c.isLive(b) || c.shutting[b] || notLed[b] == 0 {
			continue
		}
		ratio := float64(notLed[b]) * 100 / float64(len(tps))
		if ratio > float64(c.cfg.ImbalancePercentage) {
			c.log.Info("leader imbalance above threshold; rebalancing", "broker", b, "imbalance_percent", int(ratio))
			for _, tp := range tps {
				if st := c.states[tp]; st.Leader != b && slices.Contains(st.ISR, b) {
					todo = append(todo, tp)
				}
			}
		}
	}
	if len(todo) > 0 {
		c.electLeaders(Preferred, todo)
	}
}

// ---- controlled shutdown ----

// ControlledShutdown moves leaderships away from a broker that is shutting down
// and takes it out of the ISRs; it returns the partitions it still leads.
func (c *Controller) ControlledShutdown(ctx context.Context, id int32, epoch int64) ([]TP, error) {
	var remaining []TP
	var rerr error
	err := c.call(ctx, func() { remaining, rerr = c.controlledShutdown(id, epoch) })
	if err != nil {
		return nil, err
	}
	return remaining, rerr
}

func (c *Controller) controlledShutdown(id int32, epoch int64) ([]TP, error) {
	info, ok := c.brokers[id]
	if !ok {
		return nil, kerr.BrokerNotAvailable
	}
	if epoch >= 0 && epoch < info.Epoch {
		return nil, kerr.StaleBrokerEpoch
	}
	c.shutting[id] = true
	var changed, stopFollow []TP
	for _, tp := range c.allPartitions() {
		st := c.states[tp]
		if c.deleting[tp.Topic] || !slices.Contains(st.Replicas, id) || !st.HasState {
			continue
		}
		if st.Leader == id {
			if len(st.Replicas) == 1 {
				continue
			}
			moved := c.update(tp, func(st *PartitionState) (zkdata.LeaderIsr, bool) {
				nst := st.LeaderIsr
				for _, r := range st.Replicas {
					if r != id && c.isLive(r) && !c.shutting[r] && slices.Contains(st.ISR, r) {
						nst.Leader = r
						nst.ISR = slices.DeleteFunc(slices.Clone(st.ISR), func(x int32) bool { return x == id })
						nst.LeaderEpoch++
						return nst, true
					}
				}
				return nst, false
			})
			if moved {
				changed = append(changed, tp)
				// It now follows: stop it, or the new leader would take it back
				// into the ISR before it exits.
				stopFollow = append(stopFollow, tp)
			}
			continue
		}
		if slices.Contains(st.ISR, id) && len(st.ISR) > 1 {
			ok := c.update(tp, func(st *PartitionState) (zkdata.LeaderIsr, bool) {
				if !slices.Contains(st.ISR, id) || len(st.ISR) < 2 || st.Leader == id {
					return st.LeaderIsr, false
				}
				nst := st.LeaderIsr
				nst.ISR = slices.DeleteFunc(slices.Clone(st.ISR), func(x int32) bool { return x == id })
				nst.LeaderEpoch++
				return nst, true
			})
			if ok {
				changed = append(changed, tp)
			}
		}
		stopFollow = append(stopFollow, tp)
	}
	var others []int32
	for b := range c.brokers {
		if b != id {
			others = append(others, b)
		}
	}
	c.sendLeaderAndIsr(changed, others)
	c.sendStopReplica(id, stopFollow, false)
	c.sendUpdateMetadata()
	c.publish()
	var remaining []TP
	for _, tp := range c.allPartitions() {
		if c.states[tp].Leader == id {
			remaining = append(remaining, tp)
		}
	}
	c.log.Info("controlled shutdown", "broker", id, "moved", len(changed), "still_leading", len(remaining))
	return remaining, nil
}

// ---- admin znodes ----

func (c *Controller) watchDeletes() {
	names, _, ch, err := c.store.ChildrenW(c.ctx, zkdata.DeleteTopicsPath)
	if err != nil {
		c.log.Error("watching topic deletions", "err", err)
		return
	}
	go c.rearm(ch, c.watchDeletes)
	for _, t := range names {
		if _, ok := c.assignments[t]; !ok {
			// Nothing to delete (already gone or never existed).
			_ = c.store.Delete(c.ctx, zkdata.DeleteTopicsPath+"/"+t, -1)
			continue
		}
		if !c.deleting[t] {
			c.log.Info("deleting topic", "topic", t)
			c.deleting[t] = true
		}
	}
	c.retryDeletes()
}

// retryDeletes finishes deletions whose replicas are all live: StopReplica with
// delete on every replica, then remove the topic's znodes.
func (c *Controller) retryDeletes() {
	for t := range c.deleting {
		a := c.assignments[t]
		ready := true
		for _, replicas := range a.Partitions {
			for _, r := range replicas {
				if !c.isLive(r) {
					ready = false
				}
			}
		}
		c.sendUpdateMetadata() // the topic disappears from metadata at once
		if !ready {
			c.log.Info("topic deletion waits for offline replicas", "topic", t)
			continue
		}
		perBroker := map[int32][]TP{}
		for p, replicas := range a.Partitions {
			for _, r := range replicas {
				perBroker[r] = append(perBroker[r], TP{t, p})
			}
		}
		for b, tps := range perBroker {
			c.sendStopReplica(b, tps, true)
		}
		ctx := c.ctx
		// Only the current controller deletes (a fenced one would find the epoch
		// znode moved on).
		if err := c.store.Multi(ctx, coord.CheckOp(zkdata.ControllerEpochPath, c.epochVersion)); err != nil {
			c.log.Error("not deleting topic: controller epoch check failed", "topic", t, "err", err)
			continue
		}
		if err := c.store.DeleteAll(ctx, zkdata.TopicPath(t)); err != nil && !errors.Is(err, coord.ErrNoNode) {
			c.log.Error("deleting topic znode", "topic", t, "err", err)
			continue
		}
		_ = c.store.Delete(ctx, zkdata.ConfigTopicsPath+"/"+t, -1)
		_ = c.store.Delete(ctx, zkdata.DeleteTopicsPath+"/"+t, -1)
		delete(c.deleting, t)
		c.forgetTopic(t)
		c.log.Info("topic deleted", "topic", t)
	}
	c.publish()
}

func (c *Controller) watchIsrChanges() {
	names, _, ch, err := c.store.ChildrenW(c.ctx, zkdata.IsrChangeNotificationPath)
	if err != nil {
		c.log.Error("watching ISR change notifications", "err", err)
		return
	}
	go c.rearm(ch, c.watchIsrChanges)
	if len(names) == 0 {
		return
	}
	for _, n := range names {
		path := zkdata.IsrChangeNotificationPath + "/" + n
		data, _, err := c.store.Get(c.ctx, path)
		if err == nil {
			parts, derr := zkdata.DecodeIsrChange(data)
			if derr == nil {
				for _, p := range parts {
					c.refreshState(TP{p.Topic, p.Partition})
				}
			}
		}
		_ = c.store.Delete(c.ctx, path, -1)
	}
	c.checkReassignments()
	c.sendUpdateMetadata()
	c.publish()
}

func (c *Controller) refreshState(tp TP) {
	st, ok := c.states[tp]
	if !ok {
		return
	}
	data, zst, err := c.store.Get(c.ctx, zkdata.PartitionStatePath(tp.Topic, tp.Partition))
	if err != nil {
		return
	}
	li, err := zkdata.DecodeLeaderIsr(data, zst.Version)
	if err != nil {
		return
	}
	st.LeaderIsr, st.HasState = li, true
}

func (c *Controller) watchPreferred() {
	ok, _, ch, err := c.store.ExistsW(c.ctx, zkdata.PreferredReplicaElectionPath)
	if err != nil {
		c.log.Error("watching preferred replica election", "err", err)
		return
	}
	go c.rearm(ch, c.watchPreferred)
	if !ok {
		return
	}
	data, _, err := c.store.Get(c.ctx, zkdata.PreferredReplicaElectionPath)
	if err == nil {
		parts, derr := zkdata.DecodePreferredReplicaElection(data)
		if derr != nil {
			c.log.Warn("unreadable preferred replica election request", "err", derr)
		} else {
			var tps []TP
			for _, p := range parts {
				tps = append(tps, TP{p.Topic, p.Partition})
			}
			c.log.Info("preferred replica election requested through the store", "partitions", len(tps))
			c.electLeaders(Preferred, tps)
		}
	}
	_ = c.store.Delete(c.ctx, zkdata.PreferredReplicaElectionPath, -1)
}

// brokerAddr returns a live broker's host:port.
func (c *Controller) brokerAddr(id int32) (string, bool) {
	info, ok := c.brokers[id]
	if !ok {
		return "", false
	}
	return fmt.Sprintf("%s:%d", info.Host, info.Port), true
}
