package assignor_test

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/ktoolhq/ktool/assignor"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func owning(mem assignor.Member, generation int32, owned map[string][]int32) assignor.Member {
	mem.Owned, mem.Generation = owned, generation
	return mem
}

func TestStickyClaimsResolveByGeneration(t *testing.T) {
	parts := map[string]int32{"t0": 3}
	cases := []struct {
		name    string
		a       assignor.Assignor
		members []assignor.Member
		want    assignor.Assignment
	}{
		{
			name: "higher generation wins",
			a:    assignor.Sticky(),
			members: []assignor.Member{
				owning(m("A", "t0"), 5, map[string][]int32{"t0": {0}}),
				owning(m("B", "t0"), 4, map[string][]int32{"t0": {0, 1}}),
				owning(m("C", "t0"), 5, map[string][]int32{"t0": {2}}),
			},
			want: assignor.Assignment{"A": {"t0": {0}}, "B": {"t0": {1}}, "C": {"t0": {2}}},
		},
		{
			name: "a known generation beats an unknown one",
			a:    assignor.Sticky(),
			members: []assignor.Member{
				owning(m("A", "t0"), -1, map[string][]int32{"t0": {1, 2}}),
				owning(m("B", "t0"), 0, map[string][]int32{"t0": {2}}),
				m("C", "t0"),
			},
			want: assignor.Assignment{"A": {"t0": {1}}, "B": {"t0": {2}}, "C": {"t0": {0}}},
		},
		{
			name: "equal claims at the highest generation cancel out",
			a:    assignor.Sticky(),
			members: []assignor.Member{
				owning(m("A", "t0"), 5, map[string][]int32{"t0": {0}}),
				owning(m("B", "t0"), 5, map[string][]int32{"t0": {0, 1}}),
				m("C", "t0"),
			},
			// t0/0 is nobody's: it goes to the least loaded, first in
			// member order, A; C takes the last.
			want: assignor.Assignment{"A": {"t0": {0}}, "B": {"t0": {1}}, "C": {"t0": {2}}},
		},
		{
			name: "cooperative gives a tied partition to one of its claimants",
			a:    assignor.CooperativeSticky(),
			members: []assignor.Member{
				owning(m("A", "t0"), 5, map[string][]int32{"t0": {0}}),
				owning(m("B", "t0"), 5, map[string][]int32{"t0": {0, 1}}),
				m("C", "t0"),
			},
			// A already consumes t0/0 and keeps it; B sees it missing
			// and revokes it. Nobody starts consuming it.
			want: assignor.Assignment{"A": {"t0": {0}}, "B": {"t0": {1}}, "C": {"t0": {2}}},
		},
		{
			name: "cooperative withholds a partition from a stale claimant",
			a:    assignor.CooperativeSticky(),
			members: []assignor.Member{
				owning(m("A", "t0"), 3, map[string][]int32{"t0": {0, 1}}),
				owning(m("B", "t0"), 5, map[string][]int32{"t0": {0, 1, 2}}),
				m("C", "t0"),
			},
			// B (generation 5) owns all three; balance takes t0/2 and
			// one more from it. A's stale claim does not make it an
			// owner, so nothing B is losing goes anywhere this round.
			want: assignor.Assignment{"A": {}, "B": {"t0": {0}}, "C": {}},
		},
		{
			name: "cooperative withholds a partition another member claims",
			a:    assignor.CooperativeSticky(),
			members: []assignor.Member{
				owning(m("A", "t0"), 5, map[string][]int32{"t0": {0, 1, 2}}),
				m("B", "t0"),
				m("C", "t0"),
			},
			want: assignor.Assignment{"A": {"t0": {0}}, "B": {}, "C": {}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := mustAssign(t, c.a, c.members, parts); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got  %v\nwant %v", got, c.want)
			}
		})
	}
}

func TestCooperativeRevokesBeforeHandingOver(t *testing.T) {
	a := assignor.CooperativeSticky()
	parts := map[string]int32{"t0": 4, "t1": 1}
	join := func(id string, gen int32, owned map[string][]int32, topics ...string) assignor.Member {
		mem := owning(m(id, topics...), gen, owned)
		mem.UserData = a.UserData(owned, gen)
		return mem
	}

	// A owned everything; B joins and A drops t1. Round one only takes
	// partitions away from A: it keeps three of t0, the most it can with
	// B the only one able to consume t1.
	first := mustAssign(t, a, []assignor.Member{
		join("A", 1, map[string][]int32{"t0": {0, 1, 2, 3}, "t1": {0}}, "t0"),
		join("B", -1, map[string][]int32{}, "t0", "t1"),
	}, parts)
	want := assignor.Assignment{"A": {"t0": {0, 1, 2}}, "B": {}}
	if !reflect.DeepEqual(first, want) {
		t.Fatalf("first rebalance: got %v, want %v", first, want)
	}

	// A revoked t0/3 and t1/0 and rejoined: now B gets them.
	second := mustAssign(t, a, []assignor.Member{
		join("A", 2, first["A"], "t0"),
		join("B", 2, first["B"], "t0", "t1"),
	}, parts)
	want = assignor.Assignment{"A": {"t0": {0, 1, 2}}, "B": {"t0": {3}, "t1": {0}}}
	if !reflect.DeepEqual(second, want) {
		t.Fatalf("second rebalance: got %v, want %v", second, want)
	}
}

// A cooperative member whose subscription predates the generation field
// (v1) has its generation in the user data.
func TestCooperativeGenerationFromUserData(t *testing.T) {
	a := assignor.CooperativeSticky()
	old := owning(m("A", "t0"), -1, map[string][]int32{"t0": {0}})
	old.UserData = a.UserData(nil, 9)
	newer := owning(m("B", "t0"), 8, map[string][]int32{"t0": {0}})
	got := mustAssign(t, a, []assignor.Member{old, newer}, map[string]int32{"t0": 2})
	// A's claim (generation 9 from its user data) beats B's (8), so A
	// keeps t0/0, and B gets t0/1 (not t0/0, which A still owns).
	want := assignor.Assignment{"A": {"t0": {0}}, "B": {"t0": {1}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestUserData(t *testing.T) {
	owned := map[string][]int32{"b": {3, 1}, "a": {2}}
	data := assignor.Sticky().UserData(owned, 7)

	var meta kmsg.StickyMemberMetadata
	if err := meta.ReadFrom(data); err != nil {
		t.Fatalf("kmsg cannot read sticky user data: %v", err)
	}
	if meta.Generation != 7 || len(meta.CurrentAssignment) != 2 || meta.CurrentAssignment[0].Topic != "a" ||
		!reflect.DeepEqual(meta.CurrentAssignment[1].Partitions, []int32{1, 3}) {
		t.Fatalf("kmsg read %+v", meta)
	}
	got, gen, err := assignor.DecodeStickyUserData(data)
	if err != nil || gen != 7 || !reflect.DeepEqual(got, map[string][]int32{"a": {2}, "b": {1, 3}}) {
		t.Fatalf("DecodeStickyUserData = %v, %d, %v", got, gen, err)
	}

	v0 := assignor.Sticky().UserData(owned, -1)
	if _, gen, err := assignor.DecodeStickyUserData(v0); err != nil || gen != -1 {
		t.Fatalf("version 0 user data: generation %d, %v", gen, err)
	}

	if got := assignor.CooperativeSticky().UserData(owned, 7); !bytes.Equal(got, []byte{0, 0, 0, 7}) {
		t.Fatalf("cooperative-sticky user data = %x", got)
	}
	for _, a := range []assignor.Assignor{assignor.Range(), assignor.RoundRobin()} {
		if got := a.UserData(owned, 7); got != nil {
			t.Errorf("%s user data = %x, want none", a.Name(), got)
		}
	}
}

func TestDecodeStickyUserDataRejectsBadInput(t *testing.T) {
	good := assignor.Sticky().UserData(map[string][]int32{"t": {1, 2}}, 3)
	cases := map[string][]byte{
		"truncated":          good[:len(good)-5],
		"trailing bytes":     append(append([]byte{}, good...), 0, 0),
		"huge topic count":   {0x7f, 0xff, 0xff, 0xff},
		"huge partitions":    {0, 0, 0, 1, 0, 1, 't', 0x7f, 0xff, 0xff, 0xff},
		"negative topic len": {0, 0, 0, 1, 0xff, 0xff, 0, 0, 0, 0},
		"duplicate topic":    {0, 0, 0, 2, 0, 1, 't', 0, 0, 0, 0, 0, 1, 't', 0, 0, 0, 0},
	}
	for name, b := range cases {
		if _, _, err := assignor.DecodeStickyUserData(b); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func FuzzDecodeStickyUserData(f *testing.F) {
	f.Add(assignor.Sticky().UserData(map[string][]int32{"t": {1, 2}, "u": {0}}, 3))
	f.Add(assignor.Sticky().UserData(nil, -1))
	f.Add([]byte{0, 0, 0, 7})
	f.Fuzz(func(t *testing.T, b []byte) {
		owned, gen, err := assignor.DecodeStickyUserData(b)
		if err != nil {
			return
		}
		again, gen2, err := assignor.DecodeStickyUserData(assignor.Sticky().UserData(owned, gen))
		if err != nil || gen2 != gen || len(again) != len(owned) {
			t.Fatalf("round trip of %v gen %d: %v gen %d, %v", owned, gen, again, gen2, err)
		}
	})
}
