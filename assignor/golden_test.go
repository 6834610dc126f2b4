package assignor_test

import (
	"reflect"
	"testing"

	"github.com/ktoolhq/ktool/assignor"
)

func m(id string, topics ...string) assignor.Member {
	return assignor.Member{ID: id, Topics: topics, Generation: -1}
}

func mustAssign(t *testing.T, a assignor.Assignor, members []assignor.Member, partitions map[string]int32) assignor.Assignment {
	t.Helper()
	got, err := a.Assign(members, partitions)
	if err != nil {
		t.Fatalf("%s: %v", a.Name(), err)
	}
	return got
}

// The examples of Kafka's RangeAssignor and RoundRobinAssignor
// documentation, and the member order of KIP-345 static membership.
func TestGolden(t *testing.T) {
	twoByTwo := []assignor.Member{m("C0", "t0", "t1"), m("C1", "t0", "t1")}
	threeEach := map[string]int32{"t0": 3, "t1": 3}
	cases := []struct {
		name       string
		a          assignor.Assignor
		members    []assignor.Member
		partitions map[string]int32
		want       assignor.Assignment
	}{
		{
			name: "range two consumers two topics", a: assignor.Range(),
			members: twoByTwo, partitions: threeEach,
			want: assignor.Assignment{
				"C0": {"t0": {0, 1}, "t1": {0, 1}},
				"C1": {"t0": {2}, "t1": {2}},
			},
		},
		{
			name: "roundrobin two consumers two topics", a: assignor.RoundRobin(),
			members: twoByTwo, partitions: threeEach,
			want: assignor.Assignment{
				"C0": {"t0": {0, 2}, "t1": {1}},
				"C1": {"t0": {1}, "t1": {0, 2}},
			},
		},
		{
			name: "roundrobin uneven subscriptions", a: assignor.RoundRobin(),
			members: []assignor.Member{
				m("C0", "t0"), m("C1", "t0", "t1"), m("C2", "t0", "t1", "t2"),
			},
			partitions: map[string]int32{"t0": 1, "t1": 2, "t2": 3},
			want: assignor.Assignment{
				"C0": {"t0": {0}},
				"C1": {"t1": {0}},
				"C2": {"t1": {1}, "t2": {0, 1, 2}},
			},
		},
		{
			name: "range static members first by instance ID", a: assignor.Range(),
			members: []assignor.Member{
				m("a", "t0"),
				{ID: "b", InstanceID: "y", Topics: []string{"t0"}, Generation: -1},
				{ID: "c", InstanceID: "x", Topics: []string{"t0"}, Generation: -1},
			},
			partitions: map[string]int32{"t0": 5},
			want: assignor.Assignment{
				"c": {"t0": {0, 1}},
				"b": {"t0": {2, 3}},
				"a": {"t0": {4}},
			},
		},
		{
			name: "range member IDs in Java String order", a: assignor.Range(),
			// U+1F600 is a surrogate pair in UTF-16 (0xD83D...), so Java
			// puts it before U+FB01, unlike UTF-8 byte order.
			members:    []assignor.Member{m("c\uFB01", "t0"), m("c\U0001F600", "t0")},
			partitions: map[string]int32{"t0": 3},
			want: assignor.Assignment{
				"c\U0001F600": {"t0": {0, 1}},
				"c\uFB01":     {"t0": {2}},
			},
		},
		{
			name: "sticky keeps what survivors own", a: assignor.Sticky(),
			// Kafka's StickyAssignor documentation: C1 leaves a group of
			// three over t0..t3 of two partitions; C0 and C2 keep theirs.
			members: []assignor.Member{
				withUserData(assignor.Sticky(), m("C0", "t0", "t1", "t2", "t3"), map[string][]int32{"t0": {0}, "t1": {1}, "t3": {0}}, 4),
				withUserData(assignor.Sticky(), m("C2", "t0", "t1", "t2", "t3"), map[string][]int32{"t1": {0}, "t2": {1}}, 4),
			},
			partitions: map[string]int32{"t0": 2, "t1": 2, "t2": 2, "t3": 2},
			want: assignor.Assignment{
				"C0": {"t0": {0}, "t1": {1}, "t3": {0}, "t2": {0}},
				"C2": {"t1": {0}, "t2": {1}, "t0": {1}, "t3": {1}},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := mustAssign(t, c.a, c.members, c.partitions); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got  %v\nwant %v", got, c.want)
			}
		})
	}
}

func withUserData(a assignor.Assignor, mem assignor.Member, owned map[string][]int32, generation int32) assignor.Member {
	mem.UserData = a.UserData(owned, generation)
	return mem
}

func TestByName(t *testing.T) {
	want := []string{"range", "roundrobin", "sticky", "cooperative-sticky"}
	for i, a := range assignor.Builtins() {
		if a.Name() != want[i] {
			t.Errorf("Builtins()[%d] is %q, want %q", i, a.Name(), want[i])
		}
		b, ok := assignor.ByName(want[i])
		if !ok || b.Name() != want[i] {
			t.Errorf("ByName(%q) = %v, %v", want[i], b, ok)
		}
		if b.Cooperative() != (want[i] == "cooperative-sticky") {
			t.Errorf("%s: Cooperative() = %v", want[i], b.Cooperative())
		}
	}
	if _, ok := assignor.ByName("fair"); ok {
		t.Error(`ByName("fair") found an assignor`)
	}
}
