package assignortest

import (
	"maps"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/ktoolhq/ktool/assignor"
)

// guarantee is what an assignor promises beyond validity and determinism.
//
// "Balanced within one" is only possible for some subscription shapes, and
// the built-in assignors promise different things:
//   - Range balances each topic on its own: for every topic, the members
//     subscribed to it get counts within one of each other, whatever the
//     subscriptions. Totals are not balanced: two members and two topics of
//     three partitions give 4 and 2, in Kafka too.
//   - RoundRobin, with identical subscriptions, is within one both per
//     topic and in total; with uneven subscriptions it promises nothing.
//   - Sticky and CooperativeSticky are within one in total with identical
//     subscriptions, and optimally balanced with any subscriptions: no chain
//     of moves takes a partition from a member with c partitions to one with
//     c-2 or fewer. They are also sticky.
//
// An assignor with another name is only checked for validity and
// determinism.
type guarantee struct {
	perTopic          bool // within one per topic, any subscriptions
	perTopicIdentical bool // within one per topic, identical subscriptions
	totalIdentical    bool // within one in total, identical subscriptions
	optimal           bool // no cost-reducing chain of moves
	sticky            bool
}

var guarantees = map[string]guarantee{
	"range":              {perTopic: true},
	"roundrobin":         {perTopicIdentical: true, totalIdentical: true},
	"sticky":             {totalIdentical: true, optimal: true, sticky: true},
	"cooperative-sticky": {totalIdentical: true, optimal: true, sticky: true},
}

// Run runs the conformance suite on the assignor newAssignor returns, one
// subtest per group shape: every subscribed partition is assigned exactly
// once, only to a member subscribed to its topic; the result does not
// depend on member order or on repeating the call; it is balanced as the
// assignor's guarantee says; and for the sticky assignors a balanced
// assignment survives a rebalance unchanged, and a member leaving or joining
// moves the fewest partitions balance needs, in one rebalance for eager
// assignors and, for cooperative ones, in two, without ever giving a
// partition to a member while another still owns it.
func Run(t *testing.T, newAssignor func() assignor.Assignor) {
	t.Run("invalid input", func(t *testing.T) { checkInvalid(t, newAssignor()) })
	for _, s := range shapes() {
		t.Run(s.name, func(t *testing.T) {
			a := newAssignor()
			g := guarantees[a.Name()]
			got := assign(t, a, s.members, s.partitions)
			checkValid(t, s, got, true)
			checkDeterministic(t, a, s, got)
			checkBalanced(t, g, s, got)
			if g.sticky {
				checkSticky(t, a, g, s, got)
			}
		})
	}
}

func assign(t *testing.T, a assignor.Assignor, members []assignor.Member, partitions map[string]int32) assignor.Assignment {
	t.Helper()
	before := cloneMembers(members)
	got, err := a.Assign(members, partitions)
	if err != nil {
		t.Fatalf("Assign: %v", err)
	}
	if !reflect.DeepEqual(before, members) {
		t.Fatal("Assign modified its input members")
	}
	return got
}

func checkInvalid(t *testing.T, a assignor.Assignor) {
	cases := map[string]struct {
		members    []assignor.Member
		partitions map[string]int32
	}{
		"negative partition count": {[]assignor.Member{member("c0", "t0")}, map[string]int32{"t0": -1}},
		"duplicate member ID":      {[]assignor.Member{member("c0", "t0"), member("c0", "t0")}, map[string]int32{"t0": 2}},
		"empty member ID":          {[]assignor.Member{member("", "t0")}, map[string]int32{"t0": 2}},
		"absurd partition counts": {
			[]assignor.Member{member("c0", "t0", "t1")},
			map[string]int32{"t0": math.MaxInt32, "t1": math.MaxInt32},
		},
	}
	for name, c := range cases {
		if _, err := a.Assign(c.members, c.partitions); err == nil {
			t.Errorf("%s: Assign returned no error", name)
		}
	}
}

// assignable returns, per member ID, the topics it may be given: those it
// subscribes to that have partitions.
func assignable(s shape) map[string]map[string]bool {
	out := make(map[string]map[string]bool, len(s.members))
	for _, m := range s.members {
		ts := make(map[string]bool)
		for _, t := range m.Topics {
			if s.partitions[t] > 0 {
				ts[t] = true
			}
		}
		out[m.ID] = ts
	}
	return out
}

// checkValid checks that every member has an entry and nothing else does,
// that partitions are sorted, in range, assigned only to subscribers and at
// most once, and, if complete, that every subscribed partition is assigned.
func checkValid(t *testing.T, s shape, got assignor.Assignment, complete bool) {
	t.Helper()
	subs := assignable(s)
	if len(got) != len(s.members) {
		t.Fatalf("assignment has %d members, the group %d", len(got), len(s.members))
	}
	owner := make(map[string]map[int32]string)
	for id, topics := range got {
		if _, ok := subs[id]; !ok {
			t.Fatalf("assignment names %q, which is not a member", id)
		}
		for topic, parts := range topics {
			if !subs[id][topic] {
				t.Fatalf("%s was given %s%v without subscribing to it", id, topic, parts)
			}
			if len(parts) == 0 || !slices.IsSorted(parts) {
				t.Fatalf("%s: partitions of %s are empty or not sorted: %v", id, topic, parts)
			}
			if owner[topic] == nil {
				owner[topic] = make(map[int32]string)
			}
			for _, p := range parts {
				if p < 0 || p >= s.partitions[topic] {
					t.Fatalf("%s was given %s/%d, out of range", id, topic, p)
				}
				if other, dup := owner[topic][p]; dup {
					t.Fatalf("%s/%d assigned to both %s and %s", topic, p, other, id)
				}
				owner[topic][p] = id
			}
		}
	}
	if !complete {
		return
	}
	wanted := make(map[string]bool)
	for _, ts := range subs {
		for topic := range ts {
			wanted[topic] = true
		}
	}
	for topic := range wanted {
		if n := int32(len(owner[topic])); n != s.partitions[topic] {
			t.Fatalf("%d of %d partitions of %s assigned", n, s.partitions[topic], topic)
		}
	}
}

func checkDeterministic(t *testing.T, a assignor.Assignor, s shape, want assignor.Assignment) {
	t.Helper()
	if again := assign(t, a, s.members, s.partitions); !reflect.DeepEqual(again, want) {
		t.Fatal("a second Assign with the same input gave another assignment")
	}
	reversed := slices.Clone(s.members)
	slices.Reverse(reversed)
	if got := assign(t, a, reversed, s.partitions); !reflect.DeepEqual(got, want) {
		t.Fatal("Assign with the members in reverse order gave another assignment")
	}
	rotated := append(slices.Clone(s.members[len(s.members)/2:]), s.members[:len(s.members)/2]...)
	if got := assign(t, a, rotated, s.partitions); !reflect.DeepEqual(got, want) {
		t.Fatal("Assign with the members rotated gave another assignment")
	}
}

// identical reports whether every member may be given the same topics.
func identical(s shape) bool {
	subs := assignable(s)
	var first map[string]bool
	for _, m := range s.members {
		if first == nil {
			first = subs[m.ID]
		} else if !maps.Equal(first, subs[m.ID]) {
			return false
		}
	}
	return true
}

func checkBalanced(t *testing.T, g guarantee, s shape, got assignor.Assignment) {
	t.Helper()
	same := identical(s)
	if g.perTopic || g.perTopicIdentical && same {
		checkPerTopic(t, s, got)
	}
	if g.totalIdentical && same {
		if d := spread(s, got); d > 1 {
			t.Fatalf("identical subscriptions, yet member totals differ by %d", d)
		}
	}
	if g.optimal {
		checkOptimal(t, s, got)
	}
}

func checkPerTopic(t *testing.T, s shape, got assignor.Assignment) {
	t.Helper()
	subs := assignable(s)
	for topic := range s.partitions {
		lo, hi, seen := 0, 0, false
		for _, m := range s.members {
			if !subs[m.ID][topic] {
				continue
			}
			n := len(got[m.ID][topic])
			if !seen || n < lo {
				lo = n
			}
			hi = max(hi, n)
			seen = true
		}
		if hi-lo > 1 {
			t.Fatalf("topic %s: subscribers hold between %d and %d of its partitions", topic, lo, hi)
		}
	}
}

// checkOptimal searches, from every member, for a chain of members each able
// to take one partition from the next (being subscribed to its topic) that
// ends at a member holding two or more partitions more. Moving one
// partition along such a chain would improve the balance.
func checkOptimal(t *testing.T, s shape, got assignor.Assignment) {
	t.Helper()
	if spread(s, got) <= 1 {
		return
	}
	subs := assignable(s)
	holders := make(map[string][]string) // topic -> members holding some of it
	for _, m := range s.members {
		for topic := range got[m.ID] {
			holders[topic] = append(holders[topic], m.ID)
		}
	}
	for _, l := range s.members {
		seen := map[string]bool{l.ID: true}
		seenTopic := make(map[string]bool)
		queue := []string{l.ID}
		for len(queue) > 0 {
			x := queue[0]
			queue = queue[1:]
			for topic := range subs[x] {
				if seenTopic[topic] {
					continue
				}
				seenTopic[topic] = true
				for _, y := range holders[topic] {
					if seen[y] {
						continue
					}
					seen[y] = true
					if total(got[y]) >= total(got[l.ID])+2 {
						t.Fatalf("not optimally balanced: %s holds %d partitions and could take one, through a chain of moves, from %s holding %d",
							l.ID, total(got[l.ID]), y, total(got[y]))
					}
					queue = append(queue, y)
				}
			}
		}
	}
}

// spread is the difference between the most and the least partitions a
// member holds.
func spread(s shape, got assignor.Assignment) int {
	var lo, hi int
	for i, m := range s.members {
		n := total(got[m.ID])
		if i == 0 || n < lo {
			lo = n
		}
		hi = max(hi, n)
	}
	return hi - lo
}

func total(topics map[string][]int32) int {
	n := 0
	for _, ps := range topics {
		n += len(ps)
	}
	return n
}

func cloneMembers(ms []assignor.Member) []assignor.Member {
	if ms == nil {
		return nil
	}
	out := make([]assignor.Member, len(ms))
	for i, m := range ms {
		m.Topics = slices.Clone(m.Topics)
		m.UserData = slices.Clone(m.UserData)
		if m.Owned != nil {
			owned := make(map[string][]int32, len(m.Owned))
			for t, ps := range m.Owned {
				owned[t] = slices.Clone(ps)
			}
			m.Owned = owned
		}
		out[i] = m
	}
	return out
}
