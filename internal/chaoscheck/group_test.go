package chaoscheck

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestGroupFindsViolations(t *testing.T) {
	commit := func(g *Group, p int32, at int64) {
		g.observe(kadm.OffsetResponses{"t": {p: {Offset: kadm.Offset{Topic: "t", Partition: p, At: at}}}})
	}
	final := map[int32][]Stored{0: {{0, 1, seqValue(1)}, {1, 1, seqValue(2)}}, 1: {{0, 1, seqValue(3)}}}
	clean := NewGroup(nil, "g", "t")
	clean.assigned("a", 1, []int32{0, 1})
	clean.assigned("a", 2, []int32{0})
	clean.assigned("b", 2, []int32{1})
	for _, s := range []struct {
		p   int32
		off int64
		v   []byte
	}{{0, 0, seqValue(1)}, {0, 1, seqValue(2)}, {1, 0, seqValue(3)}, {0, 1, seqValue(2)}} {
		clean.processLocked(&kgo.Record{Partition: s.p, Offset: s.off, Value: s.v})
	}
	commit(clean, 0, 1)
	commit(clean, 0, 2)
	commit(clean, 1, 1)
	if p := clean.Check(final); len(p) != 0 {
		t.Fatalf("clean run reported: %v", p)
	}
	if err := clean.CaughtUp(map[int32]int64{0: 2, 1: 1}); err != nil {
		t.Fatal(err)
	}
	if err := clean.CaughtUp(map[int32]int64{0: 3}); err == nil {
		t.Fatal("caught up past the committed offset")
	}

	bad := NewGroup(nil, "g", "t")
	bad.assigned("a", 3, []int32{0, 1})
	bad.assigned("b", 3, []int32{1})
	bad.processLocked(&kgo.Record{Partition: 0, Offset: 0, Value: seqValue(1)})
	bad.processLocked(&kgo.Record{Partition: 0, Offset: 0, Value: seqValue(9)})
	bad.processLocked(&kgo.Record{Partition: 1, Offset: 0, Value: seqValue(7)})
	commit(bad, 0, 5)
	commit(bad, 0, 4)
	got := strings.Join(bad.Check(final), "\n")
	for _, want := range []string{
		"partition 1 owned by members a and b at generation 3",
		"partition 0 offset 0: processed as",
		"committed offset went back from 5 to 4",
		"partition 0 offset 1: never processed",
		"partition 1 offset 0: processed as 0000000000000007, the log holds",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems %q do not mention %q", got, want)
		}
	}
}
