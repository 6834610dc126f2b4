package controller

import (
	"errors"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// The admin znodes: topic deletions, ISR change notifications and preferred
// replica election requests.

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
