package reassign

import (
	"slices"
	"strings"
	"testing"
)

// roundRobin is n partitions of replication rf over brokers 0..nb-1, led
// round-robin, as topic creation places them.
func roundRobin(topic string, n, rf, nb int) Assignment {
	a := Assignment{topic: {}}
	for p := range n {
		var rs []int32
		for r := range rf {
			rs = append(rs, int32((p+r)%nb))
		}
		a[topic][int32(p)] = rs
	}
	return a
}

func brokers(ids ...int32) []BrokerInfo {
	var out []BrokerInfo
	for _, id := range ids {
		out = append(out, BrokerInfo{ID: id})
	}
	return out
}

func checkBalanced(t *testing.T, a Assignment, bs []BrokerInfo) {
	t.Helper()
	for _, l := range Loads(a, bs) {
		if !slices.ContainsFunc(bs, func(b BrokerInfo) bool { return b.ID == l.Broker }) {
			t.Errorf("broker %d is not a target but holds %d replicas", l.Broker, l.Replicas)
		}
	}
	loads := Loads(a, bs)
	lo, hi, llo, lhi := loads[0].Replicas, loads[0].Replicas, loads[0].Leaders, loads[0].Leaders
	for _, l := range loads {
		lo, hi = min(lo, l.Replicas), max(hi, l.Replicas)
		llo, lhi = min(llo, l.Leaders), max(lhi, l.Leaders)
	}
	if hi-lo > 1 || lhi-llo > 1 {
		t.Errorf("unbalanced: %+v", loads)
	}
	for tn, ps := range a {
		for p, rs := range ps {
			for i, r := range rs {
				if slices.Contains(rs[:i], r) {
					t.Errorf("%s-%d lists %d twice: %v", tn, p, r, rs)
				}
			}
		}
	}
}

func TestGenerateAddBroker(t *testing.T) {
	cur := roundRobin("t", 6, 2, 3)
	bs := brokers(0, 1, 2, 3)
	next, err := Generate(cur, bs, GenerateOptions{Rebalance: true})
	if err != nil {
		t.Fatal(err)
	}
	checkBalanced(t, next, bs)
	// 12 replicas over 4 brokers: broker 3 takes 3, and nothing else moves.
	if m := Moves(cur, next); m != 3 {
		t.Errorf("%d replicas move, want 3: %v", m, next)
	}
}

func TestGenerateRemoveBroker(t *testing.T) {
	cur := roundRobin("t", 8, 3, 4)
	bs := brokers(0, 1, 3)
	next, err := Generate(cur, bs, GenerateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkBalanced(t, next, bs)
	on2 := 0
	for _, rs := range cur["t"] {
		if slices.Contains(rs, 2) {
			on2++
		}
	}
	if m := Moves(cur, next); m != on2 {
		t.Errorf("%d replicas move, want the %d that were on broker 2", m, on2)
	}
}

func TestGenerateRackAware(t *testing.T) {
	// Everything starts on the two brokers of rack a.
	cur := Assignment{"t": {}}
	for p := range int32(8) {
		cur["t"][p] = []int32{p % 2, (p + 1) % 2}
	}
	bs := []BrokerInfo{{0, "a"}, {1, "a"}, {2, "b"}, {3, "b"}}
	next, err := Generate(cur, bs, GenerateOptions{Rebalance: true})
	if err != nil {
		t.Fatal(err)
	}
	checkBalanced(t, next, bs)
	for p, rs := range next["t"] {
		if rs[0]/2 == rs[1]/2 {
			t.Errorf("partition %d has both replicas in one rack: %v", p, rs)
		}
	}
	if m := Moves(cur, next); m != 8 {
		t.Errorf("%d replicas move, want 8 (one per partition)", m)
	}
}

func TestGenerateRefuses(t *testing.T) {
	for _, tc := range []struct {
		bs   []BrokerInfo
		want string
	}{
		{nil, "no target brokers"},
		{brokers(0), "has 2 replicas but there are 1 target brokers"},
		{[]BrokerInfo{{0, "a"}, {1, ""}}, "give every broker a rack"},
		{brokers(0, 0), "listed twice"},
	} {
		if _, err := Generate(roundRobin("t", 2, 2, 2), tc.bs, GenerateOptions{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.bs, err, tc.want)
		}
	}
}

func TestPlanFile(t *testing.T) {
	p, err := ReadPlan(strings.NewReader(`{"version":1,"partitions":[{"topic":"t","partition":1,"replicas":[2,1],"log_dirs":["any","any"]},{"topic":"t","partition":0,"replicas":[1,2]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	if want := `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]},{"topic":"t","partition":1,"replicas":[2,1],"log_dirs":["any","any"]}]}` + "\n"; b.String() != want {
		t.Errorf("written %s, want %s", b.String(), want)
	}
	for _, bad := range []string{
		`{"version":2,"partitions":[{"topic":"t","partition":0,"replicas":[1]}]}`,
		`{"version":1,"partitions":[]}`,
		`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[]}]}`,
		`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}`,
		`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]},{"topic":"t","partition":0,"replicas":[2]}]}`,
		`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}`,
		`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]}],"x":1}`,
	} {
		if _, err := ReadPlan(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

// TestGenerateRebalanceFindsRoom: twelve partitions of RF=3 on four brokers
// held 10, 10, 10 and 6 replicas (kfake's layout). The plan used to take a
// replica off each full broker from partitions that broker 3 already held,
// and put two of them back: 10, 9, 8, 9 after one move. Moves go where the
// receiving broker holds no replica of the partition: 9 each after 3 moves.
func TestGenerateRebalanceFindsRoom(t *testing.T) {
	cur := Assignment{"d": {}}
	for p := range int32(6) {
		cur["d"][p] = []int32{0, 1, 2}
	}
	for p := range int32(6) {
		cur["d"][6+p] = []int32{3, p % 3, (p + 1) % 3}
	}
	bs := brokers(0, 1, 2, 3)
	next, err := Generate(cur, bs, GenerateOptions{Rebalance: true})
	if err != nil {
		t.Fatal(err)
	}
	checkBalanced(t, next, bs)
	if m := Moves(cur, next); m != 3 {
		t.Errorf("%d replicas move, want 3: %v", m, next)
	}
}
