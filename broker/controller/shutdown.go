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
	var todo, stopFollow []TP
	for _, tp := range c.allPartitions() {
		st := c.states[tp]
		if c.deleting[tp.Topic] || !slices.Contains(st.Replicas, id) || !st.HasState {
			continue
		}
		if st.Leader == id && len(st.Replicas) == 1 {
			continue
		}
		todo = append(todo, tp)
	}
	changed := c.updateAll(todo, func(_ TP, st *PartitionState) (zkdata.LeaderIsr, bool) {
		if st.Leader == id {
			return shutdownMoveLeader(*st, id, c.brokerSet())
		}
		return shutdownLeaveIsr(*st, id)
	})
	for _, tp := range todo {
		// A partition it led and that moved now has it follow: stop that too, or
		// the new leader would take it back into the ISR before it exits.
		if c.states[tp].Leader != id {
			stopFollow = append(stopFollow, tp)
		}
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
