package assignortest

import (
	"reflect"
	"slices"
	"testing"

	"github.com/ktoolhq/ktool/assignor"
)

// checkSticky rebalances from the first assignment: with the same members
// nothing may move; with identical subscriptions, a member leaving and a
// member joining must move exactly the partitions balance requires.
func checkSticky(t *testing.T, a assignor.Assignor, g guarantee, s shape, first assignor.Assignment) {
	t.Helper()
	if again := rebalance(t, a, s, first, 1); !reflect.DeepEqual(again, first) {
		t.Fatal("rebalancing a balanced group with unchanged members moved partitions")
	}
	if !a.Cooperative() {
		// Also as a caller that decoded the user data into Owned.
		members := withOwnership(a, s.members, first, 1)
		for i := range members {
			members[i].Owned = first[members[i].ID]
			members[i].Generation = 1
		}
		if again := assign(t, a, members, s.partitions); !reflect.DeepEqual(again, first) {
			t.Fatal("rebalancing with ownership in Owned moved partitions")
		}
	}
	if len(s.members) < 2 || !identical(s) {
		return
	}
	leave := shape{name: s.name, members: s.members[:len(s.members)-1], partitions: s.partitions}
	after := rebalance(t, a, leave, first, 1)
	checkBalanced(t, g, leave, after)
	checkMinimalMoves(t, leave, first, after)

	join := shape{name: s.name, members: append(slices.Clone(s.members), member("zz-joiner", s.members[0].Topics...)), partitions: s.partitions}
	after = rebalance(t, a, join, first, 1)
	checkBalanced(t, g, join, after)
	checkMinimalMoves(t, join, first, after)
}

// withOwnership gives each member what it owns in owned, the way a member
// of a's protocol reports it: cooperative members list owned partitions in
// the subscription, eager members have revoked them and carry them only in
// the assignor's user data.
func withOwnership(a assignor.Assignor, members []assignor.Member, owned assignor.Assignment, generation int32) []assignor.Member {
	out := cloneMembers(members)
	for i := range out {
		m := &out[i]
		mine := owned[m.ID]
		m.UserData = a.UserData(mine, generation)
		if a.Cooperative() {
			m.Owned = mine
			if m.Owned == nil {
				m.Owned = map[string][]int32{}
			}
			m.Generation = generation
		}
	}
	return out
}

// rebalance runs rebalances of s starting from owned (an assignment of a
// previous generation, possibly naming members no longer in s) until every
// subscribed partition is assigned: one for eager assignors, and for
// cooperative ones a first that only revokes partitions changing hands and
// a second that hands them over. Members keep what they are assigned, as a
// cooperative member does, and no partition may be assigned to one member
// while another still owns it.
func rebalance(t *testing.T, a assignor.Assignor, s shape, owned assignor.Assignment, generation int32) assignor.Assignment {
	t.Helper()
	current := make(assignor.Assignment, len(s.members))
	for _, m := range s.members {
		current[m.ID] = owned[m.ID]
	}
	for range 3 {
		got := assign(t, a, withOwnership(a, s.members, current, generation), s.partitions)
		if !a.Cooperative() {
			checkValid(t, s, got, true)
			return got
		}
		checkValid(t, s, got, false)
		for id, topics := range got {
			for topic, parts := range topics {
				for _, p := range parts {
					if o := ownerOf(current, topic, p); o != "" && o != id {
						t.Fatalf("%s/%d assigned to %s while %s still owns it", topic, p, id, o)
					}
				}
			}
		}
		if assigned(got) == subscribed(s) {
			checkValid(t, s, got, true)
			return got
		}
		current = got
		generation++
	}
	t.Fatal("cooperative rebalancing did not assign every partition within three rebalances")
	return nil
}

func ownerOf(a assignor.Assignment, topic string, p int32) string {
	for id, topics := range a {
		if _, ok := slices.BinarySearch(topics[topic], p); ok {
			return id
		}
	}
	return ""
}

func assigned(a assignor.Assignment) int {
	n := 0
	for _, topics := range a {
		n += total(topics)
	}
	return n
}

// subscribed counts the partitions of topics some member subscribes to.
func subscribed(s shape) int {
	wanted := make(map[string]bool)
	for _, ts := range assignable(s) {
		for t := range ts {
			wanted[t] = true
		}
	}
	n := 0
	for t := range wanted {
		n += int(s.partitions[t])
	}
	return n
}

// checkMinimalMoves checks, for identical subscriptions, that the number of
// partitions taken from a member still in the group is the least any
// balanced assignment needs: members end with floor(P/N) or one more, the
// extra going to those that held the most, and each member gives up only
// what it holds beyond its share.
func checkMinimalMoves(t *testing.T, s shape, before, after assignor.Assignment) {
	t.Helper()
	var held []int
	moved := 0
	for _, m := range s.members {
		held = append(held, total(before[m.ID]))
		for topic, parts := range before[m.ID] {
			for _, p := range parts {
				if _, ok := slices.BinarySearch(after[m.ID][topic], p); !ok {
					moved++
				}
			}
		}
	}
	slices.Sort(held)
	slices.Reverse(held)
	p, n := subscribed(s), len(s.members)
	least := 0
	for i, h := range held {
		share := p / n
		if i < p%n {
			share++
		}
		least += max(0, h-share)
	}
	if moved != least {
		t.Fatalf("%d partitions moved away from remaining members, balance needs only %d", moved, least)
	}
}
