package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// Reassignment is an in-progress partition reassignment.
type Reassignment struct {
	Replicas, Adding, Removing []int32
}

// Partition reassignment follows Kafka (KIP-455): the replica set becomes
// target + (original - target), the new replicas start following, and once every
// target replica is in the ISR the leader moves into the target set if needed, the
// ISR and AR shrink to the target and the removed replicas are stopped and deleted.

// AlterReassignments starts (target != nil) or cancels (target == nil) reassignments.
func (c *Controller) AlterReassignments(ctx context.Context, reqs map[TP][]int32) (map[TP]error, error) {
	out := map[TP]error{}
	err := c.call(ctx, func() {
		for tp, target := range reqs {
			out[tp] = c.alterReassignment(tp, target)
		}
		c.sendUpdateMetadata()
		c.publish()
	})
	return out, err
}

// ListReassignments returns in-progress reassignments (all of them when tps is nil).
func (c *Controller) ListReassignments(ctx context.Context, tps []TP) (map[TP]Reassignment, error) {
	out := map[TP]Reassignment{}
	err := c.call(ctx, func() {
		for _, tp := range c.allPartitions() {
			if tps != nil && !slices.Contains(tps, tp) {
				continue
			}
			a := c.assignments[tp.Topic]
			if len(a.Adding[tp.Partition]) == 0 && len(a.Removing[tp.Partition]) == 0 {
				continue
			}
			out[tp] = Reassignment{Replicas: slices.Clone(a.Partitions[tp.Partition]),
				Adding: slices.Clone(a.Adding[tp.Partition]), Removing: slices.Clone(a.Removing[tp.Partition])}
		}
	})
	return out, err
}

func (c *Controller) inProgress(tp TP) bool {
	a := c.assignments[tp.Topic]
	return len(a.Adding[tp.Partition]) > 0 || len(a.Removing[tp.Partition]) > 0
}

// original is the replica set before the reassignment in progress.
func (c *Controller) original(tp TP) []int32 {
	a := c.assignments[tp.Topic]
	adding := a.Adding[tp.Partition]
	return slices.DeleteFunc(slices.Clone(a.Partitions[tp.Partition]), func(r int32) bool { return slices.Contains(adding, r) })
}

func (c *Controller) alterReassignment(tp TP, target []int32) error {
	st, ok := c.states[tp]
	if !ok || c.deleting[tp.Topic] {
		return kerr.UnknownTopicOrPartition
	}
	if target == nil {
		if !c.inProgress(tp) {
			return kerr.NoReassignmentInProgress
		}
		target = c.original(tp)
	}
	if err := reassignTarget(target, c.brokerSet()); err != nil {
		return err
	}
	ors := c.original(tp)
	if slices.Equal(ors, target) && !c.inProgress(tp) {
		return nil
	}
	full, adding, removing := reassignPlan(ors, target)
	if err := c.writeAssignment(tp, full, adding, removing); err != nil {
		return err
	}
	prev := st.Replicas
	st.Replicas = full
	// When the leader is being removed (a cancelled or replaced reassignment),
	// another replica of the new set leads before the old one goes.
	written := c.update(tp, func(st *PartitionState) (zkdata.LeaderIsr, bool) {
		return reassignedState(st.LeaderIsr, full, c.brokerSet()), true
	})
	if !written {
		return fmt.Errorf("%w: the partition state could not be written; retry", kerr.UnknownServerError)
	}
	// Replicas added by a cancelled or replaced reassignment are no longer
	// wanted; they stop once the state no longer names them.
	for _, r := range prev {
		if !slices.Contains(full, r) {
			c.sendStopReplica(r, []TP{tp}, true)
		}
	}
	c.log.Info("reassignment started", "partition", tp.String(), "target", target, "adding", adding, "removing", removing)
	c.sendLeaderAndIsr([]TP{tp}, nil)
	c.maybeCompleteReassignment(tp)
	return nil
}

// maybeCompleteReassignment finishes a reassignment once the target replicas are all in the ISR.
func (c *Controller) maybeCompleteReassignment(tp TP) {
	if !c.inProgress(tp) {
		return
	}
	st := c.states[tp]
	a := c.assignments[tp.Topic]
	removing := a.Removing[tp.Partition]
	target := slices.DeleteFunc(slices.Clone(a.Partitions[tp.Partition]), func(r int32) bool { return slices.Contains(removing, r) })
	if !reassignDone(st.ISR, target) {
		return
	}
	ok := c.update(tp, func(st *PartitionState) (zkdata.LeaderIsr, bool) {
		return reassignedState(st.LeaderIsr, target, c.brokerSet()), true
	})
	if !ok {
		c.log.Warn("completing reassignment: partition state not written; retried on the next ISR change", "partition", tp.String())
		return
	}
	// The state names only the target set now; the assignment follows.
	if err := c.writeAssignment(tp, target, nil, nil); err != nil {
		c.log.Error("completing reassignment", "partition", tp.String(), "err", err)
		return
	}
	st.Replicas = target
	c.sendLeaderAndIsr([]TP{tp}, nil)
	for _, r := range removing {
		c.sendStopReplica(r, []TP{tp}, true)
	}
	c.removeFromReassignZnode(tp)
	c.log.Info("reassignment completed", "partition", tp.String(), "replicas", target, "leader", st.Leader)
}

func (c *Controller) checkReassignments() {
	for _, tp := range c.allPartitions() {
		c.maybeCompleteReassignment(tp)
	}
}

func (c *Controller) writeAssignment(tp TP, replicas, adding, removing []int32) error {
	a := c.assignments[tp.Topic]
	if a.Adding == nil {
		a.Adding = map[int32][]int32{}
	}
	if a.Removing == nil {
		a.Removing = map[int32][]int32{}
	}
	a.Partitions[tp.Partition] = replicas
	if len(adding) > 0 {
		a.Adding[tp.Partition] = adding
	} else {
		delete(a.Adding, tp.Partition)
	}
	if len(removing) > 0 {
		a.Removing[tp.Partition] = removing
	} else {
		delete(a.Removing, tp.Partition)
	}
	err := c.store.Multi(c.ctx,
		coord.CheckOp(zkdata.ControllerEpochPath, c.epochVersion),
		coord.SetOp(zkdata.TopicPath(tp.Topic), zkdata.EncodeTopicAssignment(a), -1))
	if err != nil {
		return err
	}
	c.assignments[tp.Topic] = a
	return nil
}

// watchReassignZnode handles Kafka's legacy /admin/reassign_partitions znode.
func (c *Controller) watchReassignZnode() {
	ok, _, ch, err := c.store.ExistsW(c.ctx, zkdata.ReassignPartitionsPath)
	if err != nil {
		c.log.Error("watching partition reassignments", "err", err)
		return
	}
	go c.rearm(ch, c.watchReassignZnode)
	if !ok {
		return
	}
	data, _, err := c.store.Get(c.ctx, zkdata.ReassignPartitionsPath)
	if err != nil {
		return
	}
	rs, err := zkdata.DecodeReassignment(data)
	if err != nil {
		c.log.Warn("unreadable reassignment request; deleting it", "err", err)
		_ = c.store.Delete(c.ctx, zkdata.ReassignPartitionsPath, -1)
		return
	}
	for _, r := range rs {
		tp := TP{r.Topic, r.Partition}
		if err := c.alterReassignment(tp, r.Replicas); err != nil {
			c.log.Warn("reassignment from the znode refused", "partition", tp.String(), "err", err)
			c.removeFromReassignZnode(tp)
		}
	}
	c.sendUpdateMetadata()
	c.publish()
}

// removeFromReassignZnode drops a finished partition from /admin/reassign_partitions,
// deleting the znode when nothing is left, as Kafka does.
func (c *Controller) removeFromReassignZnode(tp TP) {
	data, st, err := c.store.Get(c.ctx, zkdata.ReassignPartitionsPath)
	if err != nil {
		return
	}
	rs, err := zkdata.DecodeReassignment(data)
	if err != nil {
		return
	}
	rs = slices.DeleteFunc(rs, func(r zkdata.Reassignment) bool { return r.Topic == tp.Topic && r.Partition == tp.Partition })
	if len(rs) == 0 {
		err = c.store.Delete(c.ctx, zkdata.ReassignPartitionsPath, st.Version)
	} else {
		_, err = c.store.Set(c.ctx, zkdata.ReassignPartitionsPath, zkdata.EncodeReassignment(rs), st.Version)
	}
	if err != nil && !errors.Is(err, coord.ErrNoNode) {
		c.log.Warn("updating the reassignment znode", "err", err)
	}
}
