package controller

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/internal/zkdata"
)

// Controlled shutdown: moving leaderships off a broker that is stopping.

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
	var lead, follow []TP
	for _, tp := range c.allPartitions() {
		st := c.states[tp]
		if c.deleting[tp.Topic] || !slices.Contains(st.Replicas, id) || !st.HasState {
			continue
		}
		switch {
		case st.Leader == id && len(st.Replicas) == 1:
		case st.Leader == id:
			lead = append(lead, tp)
		default:
			follow = append(follow, tp)
		}
	}
	var others []int32
	for b := range c.brokers {
		if b != id {
			others = append(others, b)
		}
	}
	// The leaderships first, in their own Multis, LeaderAndIsr and
	// UpdateMetadata: clients are served by the new leaders without waiting
	// for the ISR clean-up of the partitions it follows (twice as many at
	// RF=3), which follows.
	compute := func(_ TP, st *PartitionState) (zkdata.LeaderIsr, bool) {
		if st.Leader == id {
			return shutdownMoveLeader(*st, id, c.brokerSet())
		}
		return shutdownLeaveIsr(*st, id)
	}
	moved := c.updateAll(lead, compute)
	c.sendLeaderAndIsr(moved, others)
	c.sendUpdateMetadata()
	left := c.updateAll(follow, compute)
	c.sendLeaderAndIsr(left, others)
	// A partition it led and that moved now has it follow: stop that too, or
	// the new leader would take it back into the ISR before it exits.
	var stopFollow []TP
	for _, tp := range append(slices.Clone(lead), follow...) {
		if c.states[tp].Leader != id {
			stopFollow = append(stopFollow, tp)
		}
	}
	c.sendStopReplica(id, stopFollow, false)
	c.sendUpdateMetadata()
	c.publish()
	var remaining []TP
	for _, tp := range c.allPartitions() {
		if c.states[tp].Leader == id {
			remaining = append(remaining, tp)
		}
	}
	c.log.Info("controlled shutdown", "broker", id, "moved", len(moved), "left_isr", len(left), "still_leading", len(remaining))
	return remaining, nil
}
