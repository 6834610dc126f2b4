package controller

import (
	"errors"
	"sync"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// The admin znodes: topic deletions, ISR change notifications and preferred
// replica election requests.

func (c *Controller) watchDeletes() {
	names, _, ch, err := c.store.ChildrenW(c.ctx, zkdata.DeleteTopicsPath)
	if err != nil {
		c.log.Error("watching topic deletions; trying again", "err", err)
		c.retrySoon(c.watchDeletes)
		return
	}
	go c.rearm(ch, c.watchDeletes)
	for _, t := range c.markDeletes(names) {
		// Nothing to delete (already gone or never existed).
		_ = c.store.Delete(c.ctx, zkdata.DeleteTopicsPath+"/"+t, -1)
	}
	c.retryDeletes()
}

// markDeletes marks the topics named under /admin/delete_topics as being
// deleted, and returns the names that are no topic.
func (c *Controller) markDeletes(names []string) (unknown []string) {
	for _, t := range names {
		if _, ok := c.assignments[t]; !ok {
			unknown = append(unknown, t)
			continue
		}
		if !c.deleting[t] {
			c.log.Info("deleting topic", "topic", t)
			c.deleting[t] = true
		}
	}
	return unknown
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
		c.log.Error("watching ISR change notifications; trying again", "err", err)
		c.retrySoon(c.watchIsrChanges)
		return
	}
	go c.rearm(ch, c.watchIsrChanges)
	if len(names) == 0 {
		return
	}
	// Thousands of notifications follow a broker's return (one per ISR change):
	// read them, and then the partition states they name, storeReads at a
	// time, apply the states here on the event loop, and delete the
	// notifications in Multis.
	notes := make([][]byte, len(names))
	parallelReads(len(names), func(i int) {
		if data, _, err := c.store.Get(c.ctx, zkdata.IsrChangeNotificationPath+"/"+names[i]); err == nil {
			notes[i] = data
		}
	})
	seen := map[TP]bool{}
	var tps []TP
	for _, data := range notes {
		parts, err := zkdata.DecodeIsrChange(data)
		if err != nil {
			continue
		}
		for _, p := range parts {
			tp := TP{p.Topic, p.Partition}
			if _, ok := c.states[tp]; ok && !seen[tp] {
				seen[tp] = true
				tps = append(tps, tp)
			}
		}
	}
	fresh := make([]*zkdata.LeaderIsr, len(tps))
	parallelReads(len(tps), func(i int) {
		data, zst, err := c.store.Get(c.ctx, zkdata.PartitionStatePath(tps[i].Topic, tps[i].Partition))
		if err != nil {
			return
		}
		if li, err := zkdata.DecodeLeaderIsr(data, zst.Version); err == nil {
			fresh[i] = &li
		}
	})
	for i, tp := range tps {
		if st := c.states[tp]; fresh[i] != nil && st != nil {
			st.LeaderIsr, st.HasState = *fresh[i], true
		}
	}
	var dels []coord.Op
	var groups []int
	for _, n := range names {
		dels = append(dels, coord.DeleteOp(zkdata.IsrChangeNotificationPath+"/"+n, -1))
		groups = append(groups, 1)
	}
	for _, sp := range coord.SplitMulti(nil, dels, groups, stateBatchBytes, 0) {
		if err := c.store.Multi(c.ctx, dels[sp.Start:sp.End]...); err != nil {
			// One already gone (or a lost connection): delete them one by one.
			for _, op := range dels[sp.Start:sp.End] {
				_ = c.store.Delete(c.ctx, op.Path, -1)
			}
		}
	}
	c.checkReassignments()
	c.sendUpdateMetadata()
	c.publish()
}

// storeReads is how many store reads the controller keeps in flight when it
// reads many znodes at once.
const storeReads = 32

// parallelReads runs read(0..n-1) storeReads at a time and waits for them.
func parallelReads(n int, read func(i int)) {
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(storeReads, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				read(i)
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
}

func (c *Controller) watchPreferred() {
	ok, _, ch, err := c.store.ExistsW(c.ctx, zkdata.PreferredReplicaElectionPath)
	if err != nil {
		c.log.Error("watching preferred replica election; trying again", "err", err)
		c.retrySoon(c.watchPreferred)
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
