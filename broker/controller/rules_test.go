package controller

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/internal/zkdata"
)

// brokers is a broker set: live are registered, stopping (a subset) asked for a
// controlled shutdown.
func brokers(live []int32, stopping ...int32) Brokers {
	b := Brokers{Registered: map[int32]zkdata.BrokerInfo{}, Stopping: map[int32]bool{}}
	for _, id := range live {
		b.Registered[id] = zkdata.BrokerInfo{ID: id}
	}
	for _, id := range stopping {
		b.Stopping[id] = true
	}
	return b
}

// part is a partition with replicas AR, a leader, a leader epoch and an ISR.
func part(ar []int32, leader, epoch int32, isr []int32) PartitionState {
	return PartitionState{Replicas: ar, HasState: true,
		LeaderIsr: zkdata.LeaderIsr{Leader: leader, LeaderEpoch: epoch, ISR: isr, ControllerEpoch: 3, ZkVersion: 7}}
}

func li(leader, epoch int32, isr []int32) zkdata.LeaderIsr {
	return zkdata.LeaderIsr{Leader: leader, LeaderEpoch: epoch, ISR: isr, ControllerEpoch: 3, ZkVersion: 7}
}

func ids(v ...int32) []int32 { return v }

// sameErr reports whether err is want (both nil, or err wraps want).
func sameErr(err, want error) bool {
	if want == nil {
		return err == nil
	}
	return errors.Is(err, want)
}

func TestInitialState(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replicas []int32
		b        Brokers
		want     zkdata.LeaderIsr
		ok       bool
	}{
		{"all live: the preferred replica leads", ids(2, 1, 3), brokers(ids(1, 2, 3)), zkdata.LeaderIsr{Leader: 2, ISR: ids(2, 1, 3)}, true},
		{"preferred down: the next leads", ids(2, 1, 3), brokers(ids(1, 3)), zkdata.LeaderIsr{Leader: 1, ISR: ids(1, 3)}, true},
		{"stopping replicas are left out", ids(1, 2, 3), brokers(ids(1, 2, 3), 1), zkdata.LeaderIsr{Leader: 2, ISR: ids(2, 3)}, true},
		{"no live replica", ids(1, 2), brokers(ids(3)), zkdata.LeaderIsr{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := initialState(tc.replicas, tc.b)
			if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("initialState = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestOfflineElectionRule(t *testing.T) {
	for _, tc := range []struct {
		name    string
		st      PartitionState
		b       Brokers
		unclean bool
		want    zkdata.LeaderIsr
		outcome electionOutcome
	}{
		{"serving leader is kept", part(ids(1, 2, 3), 1, 4, ids(1, 2, 3)), brokers(ids(1, 2, 3)), false,
			li(1, 4, ids(1, 2, 3)), keptLeader},
		{"first live ISR member in AR order leads", part(ids(1, 2, 3), 1, 4, ids(3, 2, 1)), brokers(ids(2, 3)), false,
			li(2, 5, ids(3, 2)), electedClean},
		{"a stopping leader is replaced", part(ids(1, 2, 3), 1, 4, ids(1, 2, 3)), brokers(ids(1, 2, 3), 1), false,
			li(2, 5, ids(2, 3)), electedClean},
		{"a stopping ISR member does not lead", part(ids(1, 2, 3), 1, 4, ids(1, 2, 3)), brokers(ids(2, 3), 2), false,
			li(3, 5, ids(3)), electedClean},
		{"an offline partition leads again when an ISR member returns", part(ids(1, 2), -1, 6, ids(1)), brokers(ids(1, 2)), false,
			li(1, 7, ids(1)), electedClean},
		{"no live ISR member: offline, the last leader stays in the ISR", part(ids(1, 2, 3), 1, 4, ids(1)), brokers(ids(2, 3)), false,
			li(-1, 5, ids(1)), wentOffline},
		{"no live ISR member, leader outside the ISR: the last ISR member stays", part(ids(1, 2, 3), 1, 4, ids(2, 3)), brokers(ids(4)), false,
			li(-1, 5, ids(3)), wentOffline},
		{"ISR members outside AR that serve stay in the ISR of the offline partition", part(ids(1, 2), 1, 4, ids(1, 4)), brokers(ids(4)), false,
			li(-1, 5, ids(4)), wentOffline},
		{"unclean: the first live out-of-sync replica leads alone", part(ids(1, 2, 3), 1, 4, ids(1)), brokers(ids(2, 3)), true,
			li(2, 5, ids(2)), electedUnclean},
		{"unclean prefers a live ISR member", part(ids(1, 2, 3), 1, 4, ids(1, 3)), brokers(ids(2, 3)), true,
			li(3, 5, ids(3)), electedClean},
		{"unclean with no live replica: offline", part(ids(1, 2), 1, 4, ids(1, 2)), brokers(ids(5)), true,
			li(-1, 5, ids(1)), wentOffline},
		{"already offline with no eligible replica: no change", part(ids(1, 2), -1, 6, ids(1)), brokers(ids(2)), false,
			li(-1, 6, ids(1)), keptLeader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isr := slices.Clone(tc.st.ISR)
			got, outcome := offlineElection(tc.st, tc.b, tc.unclean)
			if outcome != tc.outcome || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("offlineElection = %+v, %v; want %+v, %v", got, outcome, tc.want, tc.outcome)
			}
			if !slices.Equal(tc.st.ISR, isr) {
				t.Fatalf("the input ISR changed: %v, was %v", tc.st.ISR, isr)
			}
		})
	}
}

func TestUncleanNeeded(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   PartitionState
		b    Brokers
		want error
	}{
		{"live leader", part(ids(1, 2), 1, 0, ids(1)), brokers(ids(1, 2)), kerr.ElectionNotNeeded},
		{"stopping leader is still live", part(ids(1, 2), 1, 0, ids(1)), brokers(ids(1, 2), 1), kerr.ElectionNotNeeded},
		{"dead leader", part(ids(1, 2), 1, 0, ids(1)), brokers(ids(2)), nil},
		{"no leader", part(ids(1, 2), -1, 0, ids(1)), brokers(ids(1, 2)), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := uncleanNeeded(tc.st, tc.b); !sameErr(err, tc.want) {
				t.Fatalf("uncleanNeeded = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestPreferredElectionRule(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   PartitionState
		b    Brokers
		want zkdata.LeaderIsr
		err  error
	}{
		{"moves to the preferred replica", part(ids(1, 2, 3), 2, 4, ids(2, 3, 1)), brokers(ids(1, 2, 3)), li(1, 5, ids(2, 3, 1)), nil},
		{"preferred replica already leads", part(ids(1, 2, 3), 1, 4, ids(1, 2, 3)), brokers(ids(1, 2, 3)), li(1, 4, ids(1, 2, 3)), kerr.ElectionNotNeeded},
		{"preferred replica down", part(ids(1, 2, 3), 2, 4, ids(2, 3, 1)), brokers(ids(2, 3)), li(2, 4, ids(2, 3, 1)), kerr.PreferredLeaderNotAvailable},
		{"preferred replica stopping", part(ids(1, 2, 3), 2, 4, ids(2, 3, 1)), brokers(ids(1, 2, 3), 1), li(2, 4, ids(2, 3, 1)), kerr.PreferredLeaderNotAvailable},
		{"preferred replica out of sync", part(ids(1, 2, 3), 2, 4, ids(2, 3)), brokers(ids(1, 2, 3)), li(2, 4, ids(2, 3)), kerr.PreferredLeaderNotAvailable},
		{"no replicas", part(nil, -1, 0, nil), brokers(ids(1)), li(-1, 0, nil), kerr.InvalidReplicaAssignment},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := preferredElection(tc.st, tc.b)
			if !sameErr(err, tc.err) || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("preferredElection = %+v, %v; want %+v, %v", got, err, tc.want, tc.err)
			}
		})
	}
}

func TestDropDeadFromIsr(t *testing.T) {
	for _, tc := range []struct {
		name    string
		st      PartitionState
		b       Brokers
		want    zkdata.LeaderIsr
		changed bool
	}{
		{"dead follower leaves", part(ids(1, 2, 3), 1, 4, ids(1, 2, 3)), brokers(ids(1, 3)), li(1, 5, ids(1, 3)), true},
		{"stopping follower leaves", part(ids(1, 2, 3), 1, 4, ids(1, 2, 3)), brokers(ids(1, 2, 3), 3), li(1, 5, ids(1, 2)), true},
		{"nobody dead", part(ids(1, 2, 3), 1, 4, ids(1, 2, 3)), brokers(ids(1, 2, 3)), li(1, 4, ids(1, 2, 3)), false},
		{"dead leader: left to the election", part(ids(1, 2, 3), 1, 4, ids(1, 2, 3)), brokers(ids(2, 3)), li(1, 4, ids(1, 2, 3)), false},
		{"no leader", part(ids(1, 2), -1, 4, ids(1, 2)), brokers(ids(1)), li(-1, 4, ids(1, 2)), false},
		{"never to nothing", part(ids(1, 2), 1, 4, ids(2)), brokers(ids(1)), li(1, 4, ids(2)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := dropDeadFromIsr(tc.st, tc.b)
			if changed != tc.changed || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("dropDeadFromIsr = %+v, %v; want %+v, %v", got, changed, tc.want, tc.changed)
			}
		})
	}
}

func TestControlledShutdownRules(t *testing.T) {
	for _, tc := range []struct {
		name    string
		st      PartitionState
		b       Brokers
		want    zkdata.LeaderIsr
		changed bool
	}{
		{"next ISR member in AR order leads", part(ids(1, 2, 3), 1, 4, ids(3, 1, 2)), brokers(ids(1, 2, 3), 1), li(2, 5, ids(3, 2)), true},
		{"an out-of-sync replica never leads", part(ids(1, 2, 3), 1, 4, ids(1, 3)), brokers(ids(1, 2, 3), 1), li(3, 5, ids(3)), true},
		{"a stopping replica never leads", part(ids(1, 2, 3), 1, 4, ids(1, 2, 3)), brokers(ids(1, 2, 3), 1, 2), li(3, 5, ids(2, 3)), true},
		{"a dead replica never leads", part(ids(1, 2, 3), 1, 4, ids(1, 2, 3)), brokers(ids(1, 3), 1), li(3, 5, ids(2, 3)), true},
		{"nobody else can lead", part(ids(1, 2), 1, 4, ids(1)), brokers(ids(1, 2), 1), li(1, 4, ids(1)), false},
	} {
		t.Run("move leader: "+tc.name, func(t *testing.T) {
			got, changed := shutdownMoveLeader(tc.st, 1, tc.b)
			if changed != tc.changed || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("shutdownMoveLeader = %+v, %v; want %+v, %v", got, changed, tc.want, tc.changed)
			}
		})
	}
	for _, tc := range []struct {
		name    string
		st      PartitionState
		want    zkdata.LeaderIsr
		changed bool
	}{
		{"a follower leaves the ISR", part(ids(2, 1, 3), 2, 4, ids(2, 1, 3)), li(2, 5, ids(2, 3)), true},
		{"the last ISR member stays", part(ids(2, 1), -1, 4, ids(1)), li(-1, 4, ids(1)), false},
		{"not in the ISR", part(ids(2, 1), 2, 4, ids(2)), li(2, 4, ids(2)), false},
		{"the leader is moved, not shrunk away", part(ids(1, 2), 1, 4, ids(1, 2)), li(1, 4, ids(1, 2)), false},
	} {
		t.Run("leave ISR: "+tc.name, func(t *testing.T) {
			got, changed := shutdownLeaveIsr(tc.st, 1)
			if changed != tc.changed || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("shutdownLeaveIsr = %+v, %v; want %+v, %v", got, changed, tc.want, tc.changed)
			}
		})
	}
}

func TestReassignRules(t *testing.T) {
	b := brokers(ids(1, 2, 3, 4))
	for _, tc := range []struct {
		target []int32
		ok     bool
	}{
		{ids(1, 2), true},
		{nil, false},
		{ids(1, 1), false},
		{ids(1, 9), false},
	} {
		err := reassignTarget(tc.target, b)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, kerr.InvalidReplicaAssignment)) {
			t.Errorf("reassignTarget(%v) = %v, want ok=%v", tc.target, err, tc.ok)
		}
	}

	for _, tc := range []struct {
		original, target, full, adding, removing []int32
	}{
		{ids(1, 2, 3), ids(4, 5, 6), ids(4, 5, 6, 1, 2, 3), ids(4, 5, 6), ids(1, 2, 3)},
		{ids(1, 2), ids(2, 3), ids(2, 3, 1), ids(3), ids(1)},
		{ids(1, 2), ids(2, 1), ids(2, 1), nil, nil},
	} {
		full, adding, removing := reassignPlan(tc.original, tc.target)
		if !slices.Equal(full, tc.full) || !slices.Equal(adding, tc.adding) || !slices.Equal(removing, tc.removing) {
			t.Errorf("reassignPlan(%v, %v) = %v %v %v, want %v %v %v", tc.original, tc.target,
				full, adding, removing, tc.full, tc.adding, tc.removing)
		}
	}

	for _, tc := range []struct {
		name     string
		li       zkdata.LeaderIsr
		replicas []int32
		b        Brokers
		want     zkdata.LeaderIsr
	}{
		{"leader in the set keeps leading; the ISR shrinks to the set", li(1, 4, ids(1, 2, 3)), ids(1, 3), b, li(1, 5, ids(1, 3))},
		{"leader leaving the set: the first live ISR member of the set leads", li(1, 4, ids(1, 2, 3)), ids(3, 2), b, li(3, 5, ids(2, 3))},
		{"dead leader is replaced", li(1, 4, ids(1, 2)), ids(1, 2), brokers(ids(2)), li(2, 5, ids(1, 2))},
		{"no live ISR member in the set: no leader", li(1, 4, ids(1)), ids(2, 3), b, li(-1, 5, ids())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := reassignedState(tc.li, tc.replicas, tc.b)
			if got.Leader != tc.want.Leader || got.LeaderEpoch != tc.want.LeaderEpoch || !slices.Equal(got.ISR, tc.want.ISR) {
				t.Fatalf("reassignedState = %+v, want %+v", got, tc.want)
			}
		})
	}

	if !reassignDone(ids(3, 1, 2), ids(1, 2)) || reassignDone(ids(1), ids(1, 2)) {
		t.Error("reassignDone: a reassignment completes exactly when every target replica is in the ISR")
	}
}

func TestRebalance(t *testing.T) {
	tp := func(p int32) TP { return TP{"t", p} }
	states := map[TP]*PartitionState{}
	add := func(p int32, st PartitionState) { s := st; states[tp(p)] = &s }
	// Broker 1 prefers 0-3 and leads only 0: 75% imbalance. Broker 2 prefers 4-7
	// and leads 4-6: 25%. Broker 3 prefers 8 and leads it.
	add(0, part(ids(1, 2), 1, 0, ids(1, 2)))
	add(1, part(ids(1, 2), 2, 0, ids(2, 1)))
	add(2, part(ids(1, 2), 2, 0, ids(2, 1)))
	add(3, part(ids(1, 2), 2, 0, ids(2))) // 1 is out of sync: it cannot lead
	add(4, part(ids(2, 1), 2, 0, ids(2, 1)))
	add(5, part(ids(2, 1), 2, 0, ids(2, 1)))
	add(6, part(ids(2, 1), 2, 0, ids(2, 1)))
	add(7, part(ids(2, 1), 1, 0, ids(1, 2)))
	add(8, part(ids(3), 3, 0, ids(3)))
	add(9, part(nil, -1, 0, nil))
	parts := make([]TP, 10)
	for p := range parts {
		parts[p] = tp(int32(p))
	}
	for _, tc := range []struct {
		name    string
		b       Brokers
		percent int
		todo    []TP
		over    []imbalance
	}{
		{"over 10%: both brokers", brokers(ids(1, 2, 3)), 10, []TP{tp(1), tp(2), tp(7)}, []imbalance{{1, 75}, {2, 25}}},
		{"over 50%: broker 1 only", brokers(ids(1, 2, 3)), 50, []TP{tp(1), tp(2)}, []imbalance{{1, 75}}},
		{"exactly the threshold is not over it", brokers(ids(1, 2, 3)), 75, nil, nil},
		{"a dead broker is not rebalanced to", brokers(ids(2, 3)), 10, []TP{tp(7)}, []imbalance{{2, 25}}},
		{"a stopping broker is not rebalanced to", brokers(ids(1, 2, 3), 1), 10, []TP{tp(7)}, []imbalance{{2, 25}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			todo, over := rebalance(parts, states, tc.b, tc.percent)
			if !slices.Equal(todo, tc.todo) || !slices.Equal(over, tc.over) {
				t.Fatalf("rebalance = %v %v, want %v %v", todo, over, tc.todo, tc.over)
			}
		})
	}
}
