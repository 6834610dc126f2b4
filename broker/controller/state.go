package controller

import (
	"errors"
	"slices"
	"strconv"
	"sync"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// Partition state writes, fenced by the controller epoch znode's version and
// batched: the new states of many partitions (a topic created, the partitions
// of a dead broker elected, a controlled shutdown) go to the store in Multis
// of at most stateBatchBytes, each starting with the check of
// /controller_epoch, so 10,000 partitions cost a few transactions (and
// fsyncs) instead of 10,000.

// stateBatchBytes is the size of one Multi of partition states: about 250
// partitions, small enough that a loaded ZooKeeper answers well within the
// client's read timeout (a lost connection leaves the outcome unknown, and
// writeStates reads back), large enough that 10,000 partitions take 40.
const stateBatchBytes = 64 << 10

// stateMultisInFlight is how many of those Multis writeStates keeps sent
// and unanswered.
const stateMultisInFlight = 8

// stateWrite is one partition's new state.
type stateWrite struct {
	tp TP
	li zkdata.LeaderIsr
}

// update computes a partition's new state from its current one and writes it
// (see updateAll). compute returning false means no change.
func (c *Controller) update(tp TP, compute func(st *PartitionState) (zkdata.LeaderIsr, bool)) bool {
	return len(c.updateAll([]TP{tp}, func(_ TP, st *PartitionState) (zkdata.LeaderIsr, bool) { return compute(st) })) == 1
}

// updateAll computes the new state of each of tps from its current one and
// writes those that change, creating the state znode of a partition that has
// none. A write that lost a version race with a leader's ISR change (or found
// the znode created) is computed again from a fresh read, with the rest of its
// Multi, at most three times. Returns the partitions written, in tps order.
func (c *Controller) updateAll(tps []TP, compute func(tp TP, st *PartitionState) (zkdata.LeaderIsr, bool)) []TP {
	written := map[TP]bool{}
	pending := tps
	for attempt := 0; attempt < 3 && len(pending) > 0; attempt++ {
		var writes []stateWrite
		for _, tp := range pending {
			if li, ok := compute(tp, c.states[tp]); ok {
				writes = append(writes, stateWrite{tp, li})
			}
		}
		done, retry, fenced := c.writeStates(writes)
		for _, tp := range done {
			written[tp] = true
		}
		if fenced {
			break
		}
		pending = retry
	}
	out := make([]TP, 0, len(written))
	for _, tp := range tps {
		if written[tp] {
			out = append(out, tp)
			delete(written, tp)
		}
	}
	return out
}

// writeStates writes ws in fenced Multis. It returns the partitions written,
// those to compute again (their Multi failed on another partition's race, or
// on their own after a re-read), and whether this controller is fenced.
func (c *Controller) writeStates(ws []stateWrite) (done, retry []TP, fenced bool) {
	if len(ws) == 0 {
		return nil, nil, false
	}
	existing := c.partitionZnodes(ws)
	var ops []coord.Op
	var groups []int
	owner := make([]int, 0, len(ws)) // op index -> ws index
	for i := range ws {
		w := &ws[i]
		w.li.ControllerEpoch = c.epoch
		st := c.states[w.tp]
		path := zkdata.PartitionStatePath(w.tp.Topic, w.tp.Partition)
		data := zkdata.EncodeLeaderIsr(w.li)
		n := 1
		switch {
		case st.HasState:
			ops = append(ops, coord.SetOp(path, data, st.ZkVersion))
		case existing[w.tp]:
			ops = append(ops, coord.CreateOp(path, data, coord.Persistent))
		default:
			ops = append(ops, coord.CreateOp(zkdata.PartitionPath(w.tp.Topic, w.tp.Partition), nil, coord.Persistent),
				coord.CreateOp(path, data, coord.Persistent))
			n = 2
			owner = append(owner, i)
		}
		owner = append(owner, i)
		groups = append(groups, n)
	}
	fence := []coord.Op{coord.CheckOp(zkdata.ControllerEpochPath, c.epochVersion)}
	wsAt := func(op int) int { return owner[op] }
	spans := coord.SplitMulti(fence, ops, groups, stateBatchBytes, 0)
	// The Multis are sent together, a few at a time, and their outcomes
	// taken in order below: ZooKeeper commits the transactions queued at
	// once with one fsync of its log, where one Multi after the other paid
	// an fsync and a round trip each (a failover of 3,300 partitions is 8).
	results := make([]error, len(spans))
	var wg sync.WaitGroup
	inFlight := make(chan struct{}, stateMultisInFlight)
	for i, sp := range spans {
		wg.Add(1)
		inFlight <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-inFlight }()
			results[i] = c.store.Multi(c.ctx, append(slices.Clone(fence), ops[sp.Start:sp.End]...)...)
		}()
	}
	wg.Wait()
	for i, sp := range spans {
		first, last := wsAt(sp.Start), wsAt(sp.End-1)
		err := results[i]
		if err == nil {
			for _, w := range ws[first : last+1] {
				st := c.states[w.tp]
				w.li.ZkVersion = 0
				if st.HasState {
					w.li.ZkVersion = st.ZkVersion + 1
				}
				st.LeaderIsr, st.HasState = w.li, true
				done = append(done, w.tp)
			}
			continue
		}
		var me *coord.MultiError
		if errors.As(err, &me) && me.Index == 0 {
			// A newer controller bumped /controller_epoch: this one is a zombie. Its
			// elector sees /controller owned by another session and stops it.
			c.log.Error("controller epoch changed: another controller took over", "err", err)
			return done, nil, true
		}
		if me == nil {
			// The outcome is unknown (a lost connection: ZooKeeper may have
			// applied the Multi). What the store holds decides: a partition
			// holding the state written is done, any other is computed again.
			c.log.Warn("partition state write failed; reading back", "partitions", last-first+1, "first", ws[first].tp.String(), "err", err)
			for _, w := range ws[first : last+1] {
				if c.reread(w.tp) && c.states[w.tp].sameLeaderIsr(w.li) {
					done = append(done, w.tp)
				} else {
					retry = append(retry, w.tp)
				}
			}
			continue
		}
		bad := ws[wsAt(sp.Start+me.Index-1)].tp
		if errors.Is(err, coord.ErrBadVersion) || errors.Is(err, coord.ErrNodeExists) {
			// A leader changed the ISR at the same moment (or the znode was made
			// meanwhile): re-read it; the whole Multi is computed again.
			c.reread(bad)
			c.log.Debug("partition state write lost a race", "partition", bad.String(), "err", err)
		} else {
			c.log.Warn("partition state write failed", "partition", bad.String(), "err", err)
		}
		for _, w := range ws[first : last+1] {
			if w.tp != bad || errors.Is(err, coord.ErrBadVersion) || errors.Is(err, coord.ErrNodeExists) {
				retry = append(retry, w.tp)
			}
		}
	}
	return done, retry, false
}

// partitionZnodes reports which partitions among ws without a state znode
// already have their /partitions/<p> znode, reading each topic's children
// once; it makes the topic's /partitions znode when missing.
func (c *Controller) partitionZnodes(ws []stateWrite) map[TP]bool {
	out := map[TP]bool{}
	seen := map[string]bool{}
	for _, w := range ws {
		if c.states[w.tp].HasState || seen[w.tp.Topic] {
			continue
		}
		seen[w.tp.Topic] = true
		dir := zkdata.TopicPartitionsPath(w.tp.Topic)
		kids, _, err := c.store.Children(c.ctx, dir)
		if errors.Is(err, coord.ErrNoNode) {
			if _, err := c.store.CreateAll(c.ctx, dir, nil, coord.Persistent); err != nil && !errors.Is(err, coord.ErrNodeExists) {
				c.log.Error("creating partitions znode", "topic", w.tp.Topic, "err", err)
			}
			continue
		}
		if err != nil {
			c.log.Error("reading partitions znode", "topic", w.tp.Topic, "err", err)
			continue
		}
		for _, k := range kids {
			if p, err := strconv.ParseInt(k, 10, 32); err == nil {
				out[TP{w.tp.Topic, int32(p)}] = true
			}
		}
	}
	return out
}

// reread refreshes a partition's state from the store; false when it could
// not be read.
func (c *Controller) reread(tp TP) bool {
	data, st, err := c.store.Get(c.ctx, zkdata.PartitionStatePath(tp.Topic, tp.Partition))
	if err != nil {
		return false
	}
	li, err := zkdata.DecodeLeaderIsr(data, st.Version)
	if err != nil {
		return false
	}
	ps := c.states[tp]
	ps.LeaderIsr, ps.HasState = li, true
	return true
}

// sameLeaderIsr reports whether the partition holds the state li describes
// (leader, leader epoch, ISR, controller epoch).
func (st *PartitionState) sameLeaderIsr(li zkdata.LeaderIsr) bool {
	return st.HasState && st.Leader == li.Leader && st.LeaderEpoch == li.LeaderEpoch &&
		st.ControllerEpoch == li.ControllerEpoch && slices.Equal(st.ISR, li.ISR)
}
