package controller

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/internal/zkdata"
)

// The election rules, as pure functions of a partition's state and the broker
// set. The controller's event handlers decide which partitions to look at, write
// what these return (fenced by the controller epoch) and tell the brokers.

// Brokers is the broker set the rules see: the registered brokers, and those of
// them that asked for a controlled shutdown. A stopping broker is still live (it
// serves until it exits) but takes no new leadership and leaves the ISRs.
type Brokers struct {
	Registered map[int32]zkdata.BrokerInfo
	Stopping   map[int32]bool
	// Offline are the brokers whose replica of the partition at hand is in a
	// failed log dir (KIP-112): live, but they may not lead it nor stay in
	// its ISR.
	Offline map[int32]bool
}

// Live reports whether broker id is registered.
func (b Brokers) Live(id int32) bool {
	_, ok := b.Registered[id]
	return ok
}

// Serving reports whether broker id is registered and not shutting down: it may
// lead and stay in an ISR.
func (b Brokers) Serving(id int32) bool { return b.Live(id) && !b.Stopping[id] && !b.Offline[id] }

// serving returns the members of ids that are serving, in order.
func (b Brokers) serving(ids []int32) []int32 {
	var out []int32
	for _, id := range ids {
		if b.Serving(id) {
			out = append(out, id)
		}
	}
	return out
}

// initialState is the first state of a partition: the first serving replica in
// AR leads (the preferred replica when it is up), the serving replicas are the
// ISR. False when no replica is serving.
func initialState(replicas []int32, b Brokers) (zkdata.LeaderIsr, bool) {
	live := b.serving(replicas)
	if len(live) == 0 {
		return zkdata.LeaderIsr{}, false
	}
	return zkdata.LeaderIsr{Leader: live[0], LeaderEpoch: 0, ISR: live}, true
}

// electionOutcome says what an offline election did.
type electionOutcome int

const (
	keptLeader     electionOutcome = iota // no change
	electedClean                          // an ISR member leads
	electedUnclean                        // an out-of-sync replica leads; records may be lost
	wentOffline                           // no eligible replica; the leader is -1
)

// offlineElection elects a leader for a partition whose leader is not serving:
// the first serving ISR member in AR order; with unclean, the first serving
// replica when no ISR member is; otherwise none, and the partition goes offline
// with the ISR keeping the member(s) that have every committed record, so one of
// them leads again when it returns. A partition that is already offline with no
// eligible replica is left alone.
func offlineElection(st PartitionState, b Brokers, unclean bool) (zkdata.LeaderIsr, electionOutcome) {
	if st.Leader >= 0 && b.Serving(st.Leader) {
		return st.LeaderIsr, keptLeader
	}
	nst := st.LeaderIsr
	liveISR := b.serving(st.ISR)
	for _, r := range st.Replicas {
		if slices.Contains(liveISR, r) {
			nst.Leader = r
			nst.ISR = liveISR
			nst.LeaderEpoch++
			return nst, electedClean
		}
	}
	if unclean {
		if live := b.serving(st.Replicas); len(live) > 0 {
			nst.Leader = live[0]
			nst.ISR = []int32{live[0]}
			nst.LeaderEpoch++
			return nst, electedUnclean
		}
	}
	if st.Leader == -1 {
		return nst, keptLeader // already offline
	}
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
	return nst, wentOffline
}

// uncleanNeeded is the precondition of an unclean election an operator asks
// for: the partition has no live leader.
func uncleanNeeded(st PartitionState, b Brokers) error {
	if st.Leader >= 0 && b.Live(st.Leader) {
		return kerr.ElectionNotNeeded
	}
	return nil
}

// preferredElection moves leadership to the preferred replica (the first in AR)
// when it is serving and in the ISR. The error is ELECTION_NOT_NEEDED when it
// leads already, PREFERRED_LEADER_NOT_AVAILABLE when it cannot lead.
func preferredElection(st PartitionState, b Brokers) (zkdata.LeaderIsr, error) {
	if len(st.Replicas) == 0 {
		return st.LeaderIsr, kerr.InvalidReplicaAssignment
	}
	pref := st.Replicas[0]
	if st.Leader == pref {
		return st.LeaderIsr, kerr.ElectionNotNeeded
	}
	if !b.Serving(pref) || !slices.Contains(st.ISR, pref) {
		return st.LeaderIsr, kerr.PreferredLeaderNotAvailable
	}
	nst := st.LeaderIsr
	nst.Leader = pref
	nst.LeaderEpoch++
	return nst, nil
}

// dropDeadFromIsr takes brokers that are not serving out of the ISR of a
// partition whose leader is live, never shrinking it to nothing. False when
// nothing changes.
func dropDeadFromIsr(st PartitionState, b Brokers) (zkdata.LeaderIsr, bool) {
	isr := b.serving(st.ISR)
	if st.Leader < 0 || !b.Live(st.Leader) || len(isr) == 0 || len(isr) == len(st.ISR) {
		return st.LeaderIsr, false
	}
	nst := st.LeaderIsr
	nst.ISR = isr
	nst.LeaderEpoch++
	return nst, true
}

// shutdownMoveLeader moves the leadership of a partition led by the stopping
// broker id to the first other serving ISR member in AR order, and takes id out
// of the ISR. False when no other replica can lead.
func shutdownMoveLeader(st PartitionState, id int32, b Brokers) (zkdata.LeaderIsr, bool) {
	nst := st.LeaderIsr
	for _, r := range st.Replicas {
		if r != id && b.Serving(r) && slices.Contains(st.ISR, r) {
			nst.Leader = r
			nst.ISR = without(st.ISR, id)
			nst.LeaderEpoch++
			return nst, true
		}
	}
	return nst, false
}

// shutdownLeaveIsr takes the stopping broker id out of the ISR of a partition it
// follows, unless it is the last member. False when nothing changes.
func shutdownLeaveIsr(st PartitionState, id int32) (zkdata.LeaderIsr, bool) {
	if !slices.Contains(st.ISR, id) || len(st.ISR) < 2 || st.Leader == id {
		return st.LeaderIsr, false
	}
	nst := st.LeaderIsr
	nst.ISR = without(st.ISR, id)
	nst.LeaderEpoch++
	return nst, true
}

func without(ids []int32, id int32) []int32 {
	return slices.DeleteFunc(slices.Clone(ids), func(x int32) bool { return x == id })
}

// reassignTarget checks a reassignment's target replica list: not empty, no
// broker twice, every broker registered.
func reassignTarget(target []int32, b Brokers) error {
	if len(target) == 0 {
		return fmt.Errorf("%w: empty replica list", kerr.InvalidReplicaAssignment)
	}
	seen := map[int32]bool{}
	for _, r := range target {
		if seen[r] {
			return fmt.Errorf("%w: broker %d listed twice", kerr.InvalidReplicaAssignment, r)
		}
		seen[r] = true
		if !b.Live(r) {
			return fmt.Errorf("%w: broker %d is not registered", kerr.InvalidReplicaAssignment, r)
		}
	}
	return nil
}

// reassignPlan is KIP-455's replica set while moving from original to target:
// target + (original - target), the replicas being added and those being removed.
func reassignPlan(original, target []int32) (full, adding, removing []int32) {
	full = slices.Clone(target)
	for _, r := range original {
		if !slices.Contains(full, r) {
			full = append(full, r)
		}
	}
	for _, r := range target {
		if !slices.Contains(original, r) {
			adding = append(adding, r)
		}
	}
	for _, r := range original {
		if !slices.Contains(target, r) {
			removing = append(removing, r)
		}
	}
	return full, adding, removing
}

// reassignedState is a partition's state when its replica set becomes replicas
// (a reassignment starting or completing): the ISR keeps only members of the
// set, and when the leader is not in the set or not live, the first live ISR
// member of the set leads (-1 when none). The leader epoch always moves on.
func reassignedState(li zkdata.LeaderIsr, replicas []int32, b Brokers) zkdata.LeaderIsr {
	nst := li
	nst.ISR = slices.DeleteFunc(slices.Clone(li.ISR), func(r int32) bool { return !slices.Contains(replicas, r) })
	if !slices.Contains(replicas, nst.Leader) || !b.Live(nst.Leader) {
		nst.Leader = -1
		for _, r := range replicas {
			if b.Live(r) && slices.Contains(nst.ISR, r) {
				nst.Leader = r
				break
			}
		}
	}
	nst.LeaderEpoch++
	return nst
}

// reassignDone reports whether every target replica is in the ISR, the moment a
// reassignment completes.
func reassignDone(isr, target []int32) bool {
	for _, r := range target {
		if !slices.Contains(isr, r) {
			return false
		}
	}
	return true
}

// imbalance is a broker whose preferred partitions are too often led elsewhere.
type imbalance struct {
	Broker  int32
	Percent int
}

// rebalance is the automatic leader rebalance (auto.leader.rebalance.enable):
// for every serving broker whose imbalance (the partitions preferring it but led
// elsewhere, over the partitions preferring it) exceeds percent, the partitions
// preferring it that it could lead (it is in their ISR). parts are the
// partitions to consider, in order; the result keeps brokers in id order.
func rebalance(parts []TP, states map[TP]*PartitionState, b Brokers, percent int) ([]TP, []imbalance) {
	prefer := map[int32][]TP{}
	notLed := map[int32]int{}
	for _, tp := range parts {
		st := states[tp]
		if len(st.Replicas) == 0 {
			continue
		}
		p := st.Replicas[0]
		prefer[p] = append(prefer[p], tp)
		if st.Leader != p {
			notLed[p]++
		}
	}
	ids := make([]int32, 0, len(prefer))
	for id := range prefer {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var todo []TP
	var over []imbalance
	for _, id := range ids {
		tps := prefer[id]
		if !b.Serving(id) || notLed[id] == 0 {
			continue
		}
		ratio := float64(notLed[id]) * 100 / float64(len(tps))
		if ratio <= float64(percent) {
			continue
		}
		over = append(over, imbalance{Broker: id, Percent: int(ratio)})
		for _, tp := range tps {
			if st := states[tp]; st.Leader != id && slices.Contains(st.ISR, id) {
				todo = append(todo, tp)
			}
		}
	}
	return todo, over
}
