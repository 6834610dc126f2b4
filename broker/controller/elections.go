package controller

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/broker/coord/zkdata"
)

// Leader elections: offline, unclean, preferred (on request and by the automatic
// rebalance).

// electOffline elects leaders for partitions whose leader is not live. With
// unclean (or the topic's unclean.leader.election.enable) a live out-of-sync replica
// may lead when no ISR member is live. Returns the partitions that changed.
func (c *Controller) electOffline(tps []TP, forceUnclean bool) []TP {
	var changed []TP
	for _, tp := range tps {
		st := c.states[tp]
		if c.deleting[tp.Topic] {
			continue
		}
		if !st.HasState {
			live := c.liveOnly(st.Replicas)
			if len(live) > 0 && c.createState(tp, zkdata.LeaderIsr{Leader: live[0], LeaderEpoch: 0, ISR: live}) {
				changed = append(changed, tp)
			}
			continue
		}
		ok := c.update(tp, func(st *PartitionState) (zkdata.LeaderIsr, bool) {
			if st.Leader >= 0 && c.isLive(st.Leader) && !c.shutting[st.Leader] {
				return st.LeaderIsr, false
			}
			return c.offlineElection(tp, st, forceUnclean)
		})
		if ok {
			nst := c.states[tp].LeaderIsr
			changed = append(changed, tp)
			c.log.Info("elected leader", "partition", tp.String(), "leader", nst.Leader,
				"leader_epoch", nst.LeaderEpoch, "isr", nst.ISR)
		}
	}
	return changed
}

func (c *Controller) offlineElection(tp TP, st *PartitionState, forceUnclean bool) (zkdata.LeaderIsr, bool) {
	nst := st.LeaderIsr
	liveISR := c.liveOnly(st.ISR)
	for _, r := range st.Replicas {
		if slices.Contains(liveISR, r) {
			nst.Leader = r
			nst.ISR = liveISR
			nst.LeaderEpoch++
			return nst, true
		}
	}
	if forceUnclean || (c.cfg.Unclean != nil && c.cfg.Unclean(tp.Topic)) {
		if live := c.liveOnly(st.Replicas); len(live) > 0 {
			c.log.Warn("unclean leader election: an out-of-sync replica leads; records may be lost",
				"partition", tp.String(), "leader", live[0])
			nst.Leader = live[0]
			nst.ISR = []int32{live[0]}
			nst.LeaderEpoch++
			return nst, true
		}
	}
	if st.Leader == -1 {
		return nst, false // already offline
	}
	// No eligible replica: the partition goes offline. The ISR keeps its last
	// member(s) so that one of them leads again when it comes back.
	nst.Leader = -1
	nst.LeaderEpoch++
	switch {
	case len(liveISR) > 0:
		nst.ISR = liveISR // members shutting down
	case slices.Contains(st.ISR, st.Leader):
		nst.ISR = []int32{st.Leader} // the last leader has every committed record
	case len(st.ISR) > 1:
		nst.ISR = st.ISR[len(st.ISR)-1:]
	}
	c.log.Warn("partition offline: no live in-sync replica", "partition", tp.String(), "isr", nst.ISR)
	return nst, true
}

// ElectionType is preferred (0) or unclean (1), as in ElectLeaders.
type ElectionType int8

// Election types.
const (
	Preferred ElectionType = 0
	Unclean   ElectionType = 1
)

// ElectLeaders runs a preferred or unclean election for tps (nil: every partition)
// and returns a result per partition: nil, or a kerr error (ELECTION_NOT_NEEDED,
// PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE,
// UNKNOWN_TOPIC_OR_PARTITION).
func (c *Controller) ElectLeaders(ctx context.Context, typ ElectionType, tps []TP) (map[TP]error, error) {
	var out map[TP]error
	err := c.call(ctx, func() { out = c.electLeaders(typ, tps) })
	return out, err
}

func (c *Controller) electLeaders(typ ElectionType, tps []TP) map[TP]error {
	if tps == nil {
		tps = c.allPartitions()
	}
	out := map[TP]error{}
	var changed []TP
	for _, tp := range tps {
		st, ok := c.states[tp]
		if !ok || c.deleting[tp.Topic] {
			out[tp] = kerr.UnknownTopicOrPartition
			continue
		}
		if len(st.Replicas) == 0 {
			out[tp] = kerr.InvalidReplicaAssignment
			continue
		}
		switch typ {
		case Preferred:
			pref := st.Replicas[0]
			if st.Leader == pref {
				out[tp] = kerr.ElectionNotNeeded
				continue
			}
			if !c.isLive(pref) || c.shutting[pref] || !slices.Contains(st.ISR, pref) {
				out[tp] = kerr.PreferredLeaderNotAvailable
				continue
			}
			ok := c.update(tp, func(st *PartitionState) (zkdata.LeaderIsr, bool) {
				if st.Leader == pref || !slices.Contains(st.ISR, pref) {
					return st.LeaderIsr, false
				}
				nst := st.LeaderIsr
				nst.Leader = pref
				nst.LeaderEpoch++
				return nst, true
			})
			if !ok {
				out[tp] = kerr.PreferredLeaderNotAvailable
				continue
			}
			c.log.Info("preferred replica elected", "partition", tp.String(), "leader", pref, "leader_epoch", c.states[tp].LeaderEpoch)
			changed = append(changed, tp)
			out[tp] = nil
		case Unclean:
			if st.Leader >= 0 && c.isLive(st.Leader) {
				out[tp] = kerr.ElectionNotNeeded
				continue
			}
			before := len(changed)
			changed = append(changed, c.electOffline([]TP{tp}, true)...)
			if len(changed) == before || c.states[tp].Leader < 0 {
				out[tp] = kerr.EligibleLeadersNotAvailable
				continue
			}
			out[tp] = nil
		default:
			out[tp] = kerr.InvalidRequest
		}
	}
	c.sendLeaderAndIsr(changed, nil)
	c.sendUpdateMetadata()
	c.publish()
	return out
}

// autoRebalance moves leadership back to preferred replicas on brokers whose
// imbalance (partitions preferring them but led elsewhere, over partitions
// preferring them) exceeds leader.imbalance.per.broker.percentage.
func (c *Controller) autoRebalance() {
	prefer := map[int32][]TP{}
	notLed := map[int32]int{}
	for _, tp := range c.allPartitions() {
		st := c.states[tp]
		if c.deleting[tp.Topic] || len(st.Replicas) == 0 {
			continue
		}
		p := st.Replicas[0]
		prefer[p] = append(prefer[p], tp)
		if st.Leader != p {
			notLed[p]++
		}
	}
	var todo []TP
	for b, tps := range prefer {
		if !c.isLive(b) || c.shutting[b] || notLed[b] == 0 {
			continue
		}
		ratio := float64(notLed[b]) * 100 / float64(len(tps))
		if ratio > float64(c.cfg.ImbalancePercentage) {
			c.log.Info("leader imbalance above threshold; rebalancing", "broker", b, "imbalance_percent", int(ratio))
			for _, tp := range tps {
				if st := c.states[tp]; st.Leader != b && slices.Contains(st.ISR, b) {
					todo = append(todo, tp)
				}
			}
		}
	}
	if len(todo) > 0 {
		c.electLeaders(Preferred, todo)
	}
}
