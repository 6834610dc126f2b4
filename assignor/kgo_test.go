package assignor_test

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/ktoolhq/ktool/assignor"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// joiner is a member about to join: what it subscribes to, what it owns and
// from which generation.
type joiner struct {
	id, instance string
	topics       []string
	owned        map[string][]int32
	generation   int32
}

// join encodes each joiner's metadata with the balancer it uses (members
// of one group may use different implementations of one protocol) and
// returns the JoinGroup response members in the order kgo hands a leader:
// static members first by instance ID, then by member ID.
func join(js []joiner, use func(i int) kgo.GroupBalancer) []kmsg.JoinGroupResponseMember {
	out := make([]kmsg.JoinGroupResponseMember, len(js))
	for i, j := range js {
		topics := slices.Clone(j.topics)
		slices.Sort(topics)
		out[i] = kmsg.NewJoinGroupResponseMember()
		out[i].MemberID = j.id
		if j.instance != "" {
			out[i].InstanceID = kmsg.StringPtr(j.instance)
		}
		out[i].ProtocolMetadata = use(i).JoinGroupMetadata(topics, j.owned, j.generation)
	}
	slices.SortFunc(out, func(a, b kmsg.JoinGroupResponseMember) int {
		switch {
		case a.InstanceID != nil && b.InstanceID != nil:
			return cmp.Compare(*a.InstanceID, *b.InstanceID)
		case a.InstanceID != nil:
			return -1
		case b.InstanceID != nil:
			return 1
		}
		return cmp.Compare(a.MemberID, b.MemberID)
	})
	return out
}

// balance runs b as a kgo group leader does and decodes the assignment
// every member receives.
func balance(t *testing.T, b kgo.GroupBalancer, members []kmsg.JoinGroupResponseMember, partitions map[string]int32) assignor.Assignment {
	t.Helper()
	mb, topics, err := b.MemberBalancer(members)
	if err != nil {
		t.Fatalf("%s MemberBalancer: %v", b.ProtocolName(), err)
	}
	counts := make(map[string]int32, len(topics))
	for topic := range topics {
		counts[topic] = partitions[topic]
	}
	into, err := mb.(kgo.GroupMemberBalancerOrError).BalanceOrError(counts)
	if err != nil {
		t.Fatalf("%s balance: %v", b.ProtocolName(), err)
	}
	out := make(assignor.Assignment)
	for _, m := range members {
		out[m.MemberID] = map[string][]int32{}
	}
	for _, sa := range into.IntoSyncAssignment() {
		got, err := b.ParseSyncAssignment(sa.MemberAssignment)
		if err != nil {
			t.Fatalf("%s assignment of %s: %v", b.ProtocolName(), sa.MemberID, err)
		}
		for topic, parts := range got {
			if len(parts) > 0 {
				slices.Sort(parts)
				out[sa.MemberID][topic] = parts
			}
		}
	}
	return out
}

// randomGroup is an arbitrary group over at most six topics: uneven
// subscriptions, members subscribed to nothing, static members, topics with
// no partitions or no metadata.
func randomGroup(r *rand.Rand) ([]joiner, map[string]int32) {
	partitions := make(map[string]int32)
	ntopics := 1 + r.IntN(6)
	for t := range ntopics {
		if r.IntN(8) > 0 {
			partitions[fmt.Sprintf("t%d", t)] = int32(r.IntN(17))
		}
	}
	var js []joiner
	for i := range 1 + r.IntN(15) {
		j := joiner{id: fmt.Sprintf("m%03d-%d", r.IntN(1000), i), generation: -1}
		for t := range ntopics {
			if r.IntN(3) > 0 {
				j.topics = append(j.topics, fmt.Sprintf("t%d", t))
			}
		}
		if r.IntN(4) == 0 {
			j.instance = fmt.Sprintf("i%03d-%d", r.IntN(1000), i)
		}
		js = append(js, j)
	}
	return js, partitions
}

// Range and RoundRobin are specified exactly, so ours and kgo's must agree
// on every group.
func TestKgoInteropExact(t *testing.T) {
	pairs := []struct {
		ours   assignor.Assignor
		theirs kgo.GroupBalancer
	}{
		{assignor.Range(), kgo.RangeBalancer()},
		{assignor.RoundRobin(), kgo.RoundRobinBalancer()},
	}
	for _, p := range pairs {
		t.Run(p.ours.Name(), func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			for i := range 300 {
				js, partitions := randomGroup(r)
				members := join(js, func(int) kgo.GroupBalancer { return assignor.Balancer(p.ours) })
				ours := balance(t, assignor.Balancer(p.ours), members, partitions)
				theirs := balance(t, p.theirs, members, partitions)
				if !reflect.DeepEqual(ours, theirs) {
					t.Fatalf("group %d (%v, %v):\nours %v\nkgo  %v", i, js, partitions, ours, theirs)
				}
				direct := mustAssign(t, p.ours, membersOf(t, members), partitions)
				if !reflect.DeepEqual(withoutEmpty(direct), ours) {
					t.Fatalf("group %d: Assign gave %v, the Balancer %v", i, direct, ours)
				}
			}
		})
	}
}

func membersOf(t *testing.T, jms []kmsg.JoinGroupResponseMember) []assignor.Member {
	t.Helper()
	out := make([]assignor.Member, 0, len(jms))
	for _, jm := range jms {
		instance := ""
		if jm.InstanceID != nil {
			instance = *jm.InstanceID
		}
		m, err := assignor.DecodeMember(jm.MemberID, instance, jm.ProtocolMetadata)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func withoutEmpty(a assignor.Assignment) assignor.Assignment {
	out := make(assignor.Assignment, len(a))
	for id, topics := range a {
		out[id] = map[string][]int32{}
		for topic, parts := range topics {
			if len(parts) > 0 {
				out[id][topic] = parts
			}
		}
	}
	return out
}

// Sticky algorithms are not specified exactly. Both ours and kgo's reach
// optimal balance, whose per-member counts are unique up to order, and a
// group can mix both implementations: whichever is leader reads the
// other's metadata and keeps its assignment.
func TestKgoInteropSticky(t *testing.T) {
	pairs := []struct {
		ours   assignor.Assignor
		theirs kgo.GroupBalancer
	}{
		{assignor.Sticky(), kgo.StickyBalancer()},
		{assignor.CooperativeSticky(), kgo.CooperativeStickyBalancer()},
	}
	for _, p := range pairs {
		t.Run(p.ours.Name(), func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 4))
			ours, theirs := assignor.Balancer(p.ours), p.theirs
			mixed := func(i int) kgo.GroupBalancer {
				if i%2 == 0 {
					return ours
				}
				return theirs
			}
			for i := range 200 {
				js, partitions := randomGroup(r)
				members := join(js, mixed)
				a := balance(t, ours, members, partitions)
				b := balance(t, theirs, members, partitions)
				if ca, cb := counts(a), counts(b); !slices.Equal(ca, cb) {
					t.Fatalf("group %d (%v, %v): member counts differ:\nours %v: %v\nkgo  %v: %v", i, js, partitions, ca, a, cb, b)
				}

				// Each leader, reading metadata written by both
				// implementations, keeps a balanced assignment made
				// by the other.
				for name, leader := range map[string]kgo.GroupBalancer{"ours": ours, "kgo": theirs} {
					from := b
					if name == "kgo" {
						from = a
					}
					again := balance(t, leader, join(owningAll(js, from, 7), mixed), partitions)
					if !reflect.DeepEqual(again, from) {
						t.Fatalf("group %d: %s leader moved partitions of a balanced group:\nbefore %v\nafter  %v", i, name, from, again)
					}
				}
			}
		})
	}
}

func owningAll(js []joiner, a assignor.Assignment, generation int32) []joiner {
	out := slices.Clone(js)
	for i := range out {
		out[i].owned = maps.Clone(a[out[i].id])
		out[i].generation = generation
	}
	return out
}

// counts returns how many partitions each member holds, sorted.
func counts(a assignor.Assignment) []int {
	out := make([]int, 0, len(a))
	for _, topics := range a {
		n := 0
		for _, parts := range topics {
			n += len(parts)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func TestDecodeMember(t *testing.T) {
	owned := map[string][]int32{"t0": {1, 0}}
	t.Run("cooperative owned partitions and generation", func(t *testing.T) {
		meta := assignor.Balancer(assignor.CooperativeSticky()).JoinGroupMetadata([]string{"t0", "t1"}, owned, 4)
		m, err := assignor.DecodeMember("m", "static", meta)
		if err != nil {
			t.Fatal(err)
		}
		want := assignor.Member{ID: "m", InstanceID: "static", Topics: []string{"t0", "t1"},
			UserData: []byte{0, 0, 0, 4}, Owned: map[string][]int32{"t0": {0, 1}}, Generation: 4}
		if !reflect.DeepEqual(m, want) {
			t.Fatalf("got %+v, want %+v", m, want)
		}
	})
	t.Run("eager sticky owned partitions from the user data", func(t *testing.T) {
		meta := assignor.Balancer(assignor.Sticky()).JoinGroupMetadata([]string{"t0"}, owned, 4)
		m, err := assignor.DecodeMember("m", "", meta)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(m.Owned, map[string][]int32{"t0": {0, 1}}) || m.Generation != 4 {
			t.Fatalf("owned %v generation %d", m.Owned, m.Generation)
		}
	})
	t.Run("version 0", func(t *testing.T) {
		meta := kmsg.NewConsumerMemberMetadata()
		meta.Topics = []string{"t0"}
		m, err := assignor.DecodeMember("m", "", meta.AppendTo(nil))
		if err != nil || m.Owned != nil || m.Generation != -1 || !slices.Equal(m.Topics, []string{"t0"}) {
			t.Fatalf("got %+v, %v", m, err)
		}
	})
	t.Run("version 1 without owned partitions", func(t *testing.T) {
		meta := kmsg.NewConsumerMemberMetadata()
		meta.Topics = []string{"t0"}
		b := meta.AppendTo(nil)
		b[1] = 1
		m, err := assignor.DecodeMember("m", "", b)
		if err != nil || !slices.Equal(m.Topics, []string{"t0"}) {
			t.Fatalf("got %+v, %v", m, err)
		}
		if b[1] != 1 {
			t.Fatal("DecodeMember modified its input")
		}
	})
	t.Run("garbage", func(t *testing.T) {
		for _, b := range [][]byte{nil, {0}, {0, 3, 0x7f, 0xff, 0xff, 0xff}, {0, 1, 0, 0, 0, 1}} {
			if _, err := assignor.DecodeMember("m", "", b); err == nil {
				t.Errorf("%x: no error", b)
			}
		}
	})
}

// A broker listing a member twice gets the first listing used; an
// assignor that names a stranger fails the rebalance.
func TestBalancerEdgeCases(t *testing.T) {
	b := assignor.Balancer(assignor.Range())
	members := join([]joiner{{id: "a", topics: []string{"t"}}, {id: "b", topics: []string{"t"}}}, func(int) kgo.GroupBalancer { return b })
	members = append(members, members[0])
	got := balance(t, b, members, map[string]int32{"t": 4})
	if want := (assignor.Assignment{"a": {"t": {0, 1}}, "b": {"t": {2, 3}}}); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}

	mb, _, err := assignor.Balancer(stranger{}).MemberBalancer(members[:2])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mb.(kgo.GroupMemberBalancerOrError).BalanceOrError(map[string]int32{"t": 1}); err == nil {
		t.Fatal("an assignment naming a non-member was accepted")
	}
	if sync := mb.Balance(map[string]int32{"t": 1}).IntoSyncAssignment(); len(sync) != 2 {
		t.Fatalf("Balance after a failed assignment gave %d member assignments, want 2 empty ones", len(sync))
	}
}

type stranger struct{}

func (stranger) Name() string                              { return "stranger" }
func (stranger) Cooperative() bool                         { return false }
func (stranger) UserData(map[string][]int32, int32) []byte { return nil }
func (stranger) Assign([]assignor.Member, map[string]int32) (assignor.Assignment, error) {
	return assignor.Assignment{"zed": {"t": {0}}}, nil
}

func FuzzDecodeMember(f *testing.F) {
	f.Add(assignor.Balancer(assignor.CooperativeSticky()).JoinGroupMetadata([]string{"t0"}, map[string][]int32{"t0": {1}}, 3))
	f.Add(assignor.Balancer(assignor.Sticky()).JoinGroupMetadata([]string{"t0"}, map[string][]int32{"t0": {1}}, 3))
	f.Add([]byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := assignor.DecodeMember("m", "", b)
		if err != nil {
			return
		}
		for _, a := range assignor.Builtins() {
			if _, err := a.Assign([]assignor.Member{m}, map[string]int32{"t0": 4}); err != nil {
				t.Fatalf("%s: %v", a.Name(), err)
			}
		}
	})
}
