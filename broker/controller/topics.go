package controller

import (
	"errors"
	"maps"
	"slices"
	"sync"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// Topics and their partition assignments: loading them, new topics and new
// partitions.

// loadTopics reads the topics the controller does not know yet (with a
// watch on the list). A topic's partition states come from seed where it
// has them (seed.go), from the store otherwise; loadTopics returns the
// partitions taken from seed.
func (c *Controller) loadTopics(seed Seed) ([]TP, error) {
	names, _, ch, err := c.store.ChildrenW(c.ctx, zkdata.TopicsPath)
	if err != nil {
		return nil, err
	}
	go c.rearm(ch, c.onTopicChange)
	var seeded []TP
	for _, t := range names {
		if _, ok := c.assignments[t]; ok {
			continue
		}
		got, err := c.loadTopic(t, seed)
		if err != nil {
			return nil, err
		}
		seeded = append(seeded, got...)
	}
	return seeded, nil
}

// loadTopic reads a topic's assignment (with a watch for new partitions) and
// the state of each partition, from seed for the partitions it holds (when
// its topic id is the store's), and returns those.
func (c *Controller) loadTopic(t string, seed Seed) ([]TP, error) {
	data, _, ch, err := c.store.GetW(c.ctx, zkdata.TopicPath(t))
	if errors.Is(err, coord.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	go c.rearm(ch, func() { c.onTopicModified(t) })
	a, err := zkdata.DecodeTopicAssignment(data)
	if err != nil {
		c.log.Warn("ignoring unreadable topic assignment", "topic", t, "err", err)
		return nil, nil
	}
	c.assignments[t] = a
	copied, ok := seed[t]
	if ok && (copied.ID == [16]byte{} || copied.ID != c.topicID(t)) {
		// The copy may be of an earlier topic of that name.
		ok = false
	}
	states := make(map[TP]*PartitionState, len(a.Partitions))
	var seeded, read []TP
	for p, replicas := range a.Partitions {
		tp := TP{t, p}
		st := &PartitionState{Replicas: replicas, LeaderIsr: zkdata.LeaderIsr{Leader: -1, LeaderEpoch: -1}}
		states[tp] = st
		if li, has := copied.Partitions[p]; ok && has && li.LeaderEpoch >= 0 {
			li.ISR = slices.Clone(li.ISR)
			st.LeaderIsr, st.HasState = li, true
			seeded = append(seeded, tp)
			continue
		}
		read = append(read, tp)
	}
	if err := c.readStates(read, states); err != nil {
		return nil, err
	}
	maps.Copy(c.states, states)
	return seeded, nil
}

// readStates reads the state znodes of tps, stateReadsInFlight at a time (a
// new controller without a copy of the states loads every partition before
// it can elect, and 10,000 reads one after the other's answer took 20 s on
// a loaded machine), into their entries in states: all of them or, on an
// error, none.
func (c *Controller) readStates(tps []TP, states map[TP]*PartitionState) error {
	type read struct {
		data []byte
		stat coord.Stat
		err  error
	}
	reads := make([]read, len(tps))
	var wg sync.WaitGroup
	inFlight := make(chan struct{}, stateReadsInFlight)
	for i, tp := range tps {
		wg.Add(1)
		inFlight <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-inFlight }()
			r := &reads[i]
			r.data, r.stat, r.err = c.store.Get(c.ctx, zkdata.PartitionStatePath(tp.Topic, tp.Partition))
		}()
	}
	wg.Wait()
	for _, r := range reads {
		if r.err != nil && !errors.Is(r.err, coord.ErrNoNode) {
			return r.err
		}
	}
	for i, r := range reads {
		tp := tps[i]
		st := states[tp]
		switch {
		case r.err == nil:
			li, derr := zkdata.DecodeLeaderIsr(r.data, r.stat.Version)
			if derr != nil {
				c.log.Warn("unreadable partition state", "partition", tp.String(), "err", derr)
				st.LeaderIsr, st.HasState = zkdata.LeaderIsr{Leader: -1, LeaderEpoch: -1}, false
				break
			}
			st.LeaderIsr, st.HasState = li, true
		default: // no state znode
			st.LeaderIsr, st.HasState = zkdata.LeaderIsr{Leader: -1, LeaderEpoch: -1}, false
		}
	}
	return nil
}

// stateReadsInFlight is how many partition state reads readStates keeps sent
// and unanswered: as deep as the brokers' checks (storeReads), since on a
// loaded machine each window of reads costs a scheduling round trip.
const stateReadsInFlight = 256

func (c *Controller) onTopicChange() {
	before := map[string]bool{}
	for t := range c.assignments {
		before[t] = true
	}
	if _, err := c.loadTopics(nil); err != nil {
		c.log.Error("reading topics; trying again", "err", err)
		c.retrySoon(c.onTopicChange)
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
	if _, err := c.loadTopic(t, nil); err != nil {
		c.log.Error("reading topic; trying again", "topic", t, "err", err)
		c.assignments[t] = old
		c.retrySoon(func() { c.onTopicModified(t) })
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
	var ok, create []TP
	for _, tp := range tps {
		if c.states[tp].HasState {
			ok = append(ok, tp)
			continue
		}
		if _, live := initialState(c.states[tp].Replicas, c.brokerSet()); !live {
			c.log.Warn("new partition has no live replica; it stays offline", "partition", tp.String())
			continue
		}
		create = append(create, tp)
	}
	ok = append(ok, c.updateAll(create, func(_ TP, st *PartitionState) (zkdata.LeaderIsr, bool) {
		if st.HasState {
			return st.LeaderIsr, false
		}
		return initialState(st.Replicas, c.brokerSet())
	})...)
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
	for _, tps := range c.offlineReplicas {
		for tp := range tps {
			if tp.Topic == t {
				delete(tps, tp)
			}
		}
	}
}
