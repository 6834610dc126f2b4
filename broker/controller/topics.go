package controller

import (
	"errors"
	"slices"

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
