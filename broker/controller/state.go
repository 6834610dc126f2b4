package controller

import (
	"errors"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// Partition state writes, fenced by the controller epoch znode's version.

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
