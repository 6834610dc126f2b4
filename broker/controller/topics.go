package controller

import (
	"errors"
	"slices"
	"sync"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// Topics and their partition assignments: loading them, new topics and new
// partitions.

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
	// The state znodes are read stateReadsInFlight at a time: a new
	// controller loads every partition before it can elect, and 10,000
	// reads one after the other's answer took 20 s on a loaded machine.
	type read struct {
		tp   TP
		data []byte
		stat coord.Stat
		err  error
	}
	reads := make([]read, 0, len(a.Partitions))
	for p := range a.Partitions {
		reads = append(reads, read{tp: TP{t, p}})
	}
	var wg sync.WaitGroup
	inFlight := make(chan struct{}, stateReadsInFlight)
	for i := range reads {
		wg.Add(1)
		inFlight <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-inFlight }()
			r := &reads[i]
			r.data, r.stat, r.err = c.store.Get(c.ctx, zkdata.PartitionStatePath(t, r.tp.Partition))
		}()
	}
	wg.Wait()
	for _, r := range reads {
		st := &PartitionState{Replicas: a.Partitions[r.tp.Partition], LeaderIsr: zkdata.LeaderIsr{Leader: -1, LeaderEpoch: -1}}
		switch {
		case r.err == nil:
			li, derr := zkdata.DecodeLeaderIsr(r.data, r.stat.Version)
			if derr != nil {
				c.log.Warn("unreadable partition state", "partition", r.tp.String(), "err", derr)
				break
			}
			st.LeaderIsr = li
			st.HasState = true
		case errors.Is(r.err, coord.ErrNoNode):
		default:
			return r.err
		}
		c.states[r.tp] = st
	}
	return nil
}

// stateReadsInFlight is how many partition state reads loadTopic keeps sent
// and unanswered: as deep as the brokers' checks (storeReads), since on a
// loaded machine each window of reads costs a scheduling round trip, and a
// new controller loads all 10,000 states before its first election.
const stateReadsInFlight = 256

func (c *Controller) onTopicChange() {
	before := map[string]bool{}
	for t := range c.assignments {
		before[t] = true
	}
	if err := c.loadTopics(); err != nil {
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
	if err := c.loadTopic(t); err != nil {
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
