package controller

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/internal/zkdata"
)

// Leader elections: offline, unclean, preferred (on request and by the automatic
// rebalance).

// electOffline elects leaders for partitions whose leader is not serving (see
// offlineElection). With forceUnclean or the topic's unclean.leader.election.enable
// a live out-of-sync replica may lead when no ISR member is live. Returns the
// partitions that changed.
func (c *Controller) electOffline(tps []TP, forceUnclean bool) []TP {
	tps = slices.DeleteFunc(slices.Clone(tps), func(tp TP) bool { return c.deleting[tp.Topic] })
	changed := c.updateAll(tps, func(tp TP, st *PartitionState) (zkdata.LeaderIsr, bool) {
		if !st.HasState {
			return initialState(st.Replicas, c.brokerSetFor(tp))
		}
		unclean := forceUnclean || (c.cfg.Unclean != nil && c.cfg.Unclean(tp.Topic))
		nst, outcome := offlineElection(*st, c.brokerSetFor(tp), unclean)
		switch outcome {
		case electedUnclean:
			c.log.Warn("unclean leader election: an out-of-sync replica leads; records may be lost",
				"partition", tp.String(), "leader", nst.Leader)
		case wentOffline:
			c.log.Warn("partition offline: no live in-sync replica", "partition", tp.String(), "isr", nst.ISR)
		}
		return nst, outcome != keptLeader
	})
	for _, tp := range changed {
		nst := c.states[tp].LeaderIsr
		c.log.Debug("elected leader", "partition", tp.String(), "leader", nst.Leader,
			"leader_epoch", nst.LeaderEpoch, "isr", nst.ISR)
	}
	if len(changed) > 0 {
		c.log.Info("elected leaders", "partitions", len(changed))
	}
	return changed
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
	var changed, preferred []TP
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
			if _, err := preferredElection(*st, c.brokerSetFor(tp)); err != nil {
				out[tp] = err
				continue
			}
			preferred = append(preferred, tp)
		case Unclean:
			if err := uncleanNeeded(*st, c.brokerSet()); err != nil {
				out[tp] = err
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
	elected := c.updateAll(preferred, func(tp TP, st *PartitionState) (zkdata.LeaderIsr, bool) {
		nst, err := preferredElection(*st, c.brokerSetFor(tp))
		return nst, err == nil
	})
	for _, tp := range preferred {
		out[tp] = kerr.PreferredLeaderNotAvailable
	}
	for _, tp := range elected {
		out[tp] = nil
	}
	if len(elected) > 0 {
		c.log.Info("preferred replicas elected", "partitions", len(elected))
	}
	changed = append(changed, elected...)
	c.sendLeaderAndIsr(changed, nil)
	c.sendUpdateMetadata()
	c.publish()
	return out
}

// autoRebalance moves leadership back to preferred replicas on brokers whose
// imbalance exceeds leader.imbalance.per.broker.percentage (see rebalance).
func (c *Controller) autoRebalance() {
	parts := slices.DeleteFunc(c.allPartitions(), func(tp TP) bool { return c.deleting[tp.Topic] })
	todo, over := rebalance(parts, c.states, c.brokerSet(), c.cfg.ImbalancePercentage)
	for _, o := range over {
		c.log.Info("leader imbalance above threshold; rebalancing", "broker", o.Broker, "imbalance_percent", o.Percent)
	}
	if len(todo) > 0 {
		c.electLeaders(Preferred, todo)
	}
}
