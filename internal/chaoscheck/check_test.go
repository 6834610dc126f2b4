package chaoscheck

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func seqValue(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

func TestCheckAckedFindsViolations(t *testing.T) {
	acked := map[int32][]Ack{0: {{1, 0}, {3, 1}, {5, 2}}, 1: {{2, 0}, {4, 1}}}
	good := map[int32][]Stored{
		0: {{0, 0, seqValue(1)}, {1, 0, seqValue(3)}, {2, 0, seqValue(5)}, {3, 0, seqValue(7)}},
		1: {{0, 0, seqValue(2)}, {1, 0, seqValue(4)}},
	}
	if p := CheckAcked(acked, good); len(p) != 0 {
		t.Fatalf("clean read back reported: %v", p)
	}
	for name, tc := range map[string]struct {
		acked map[int32][]Ack
		read  map[int32][]Stored
		want  string
	}{
		"missing": {acked, map[int32][]Stored{0: good[0][:2], 1: good[1]}, "sequence 5 (offset 2) is missing"},
		"moved": {acked, map[int32][]Stored{
			0: {{0, 0, seqValue(1)}, {1, 0, seqValue(9)}, {2, 0, seqValue(5)}, {3, 0, seqValue(3)}},
			1: good[1],
		}, "sequence 3 at offset 1, found at"},
		"duplicate": {acked, map[int32][]Stored{0: good[0], 1: append(good[1][:2:2], Stored{2, 0, seqValue(7)})}, "sequence 7 stored 2 times"},
		"order":     {map[int32][]Ack{0: {{3, 1}, {1, 0}}}, good, "acknowledged at offset 0 after offset 1"},
		"garbage":   {acked, map[int32][]Stored{0: append(good[0][:4:4], Stored{4, 0, []byte("x")}), 1: good[1]}, "not a sequence number"},
	} {
		t.Run(name, func(t *testing.T) {
			problems := CheckAcked(tc.acked, tc.read)
			if !strings.Contains(strings.Join(problems, "\n"), tc.want) {
				t.Fatalf("problems %q do not mention %q", problems, tc.want)
			}
		})
	}
}

func TestLiveConsumerFindsViolations(t *testing.T) {
	rec := func(p int32, off int64, epoch int32, seq uint64) *kgo.Record {
		return &kgo.Record{Partition: p, Offset: off, LeaderEpoch: epoch, Value: seqValue(seq)}
	}
	newLC := func() *LiveConsumer {
		return &LiveConsumer{seen: map[int32]map[int64]liveRecord{0: {}}, next: map[int32]int64{}}
	}
	clean := newLC()
	for i := range int64(4) {
		clean.recordLocked(rec(0, i, 1, uint64(i)))
	}
	final := map[int32][]Stored{0: {{0, 1, seqValue(0)}, {1, 1, seqValue(1)}, {2, 1, seqValue(2)}, {3, 1, seqValue(3)}}}
	if v, _, _ := clean.Report(); len(v) != 0 {
		t.Fatalf("clean run reported: %v", v)
	}
	if p := clean.CompareFinal(final); len(p) != 0 {
		t.Fatalf("clean run compared with the final log: %v", p)
	}

	reread := newLC()
	for _, r := range []*kgo.Record{rec(0, 0, 1, 0), rec(0, 1, 1, 1), rec(0, 2, 1, 2), rec(0, 1, 1, 1), rec(0, 2, 2, 2)} {
		reread.recordLocked(r)
	}
	v, _, _ := reread.Report()
	got := strings.Join(v, "\n")
	for _, want := range []string{"offset 1: read again", "offset 2: seen under leader epoch 1 and then 2"} {
		if !strings.Contains(got, want) {
			t.Errorf("violations %q do not mention %q", v, want)
		}
	}

	rewritten := newLC()
	rewritten.recordLocked(rec(0, 0, 1, 0))
	rewritten.recordLocked(rec(0, 1, 1, 1))
	rewritten.recordLocked(rec(0, 4, 1, 4))
	p := strings.Join(rewritten.CompareFinal(map[int32][]Stored{0: {{0, 1, seqValue(0)}, {1, 2, seqValue(1)}}}), "\n")
	for _, want := range []string{"offset 1: rewritten", "offset 4: read live (epoch 1) but not in the final log"} {
		if !strings.Contains(p, want) {
			t.Errorf("comparison %q does not mention %q", p, want)
		}
	}
}
