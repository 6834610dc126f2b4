package chaos

import (
	"encoding/binary"
	"strings"
	"testing"
)

func seqValue(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

func TestCheckAckedFindsViolations(t *testing.T) {
	acked := map[int32][]ack{0: {{1, 0}, {3, 1}, {5, 2}}, 1: {{2, 0}, {4, 1}}}
	good := map[int32][]stored{
		0: {{0, seqValue(1)}, {1, seqValue(3)}, {2, seqValue(5)}, {3, seqValue(7)}},
		1: {{0, seqValue(2)}, {1, seqValue(4)}},
	}
	if p := checkAcked(acked, good); len(p) != 0 {
		t.Fatalf("clean read back reported: %v", p)
	}
	for name, tc := range map[string]struct {
		acked map[int32][]ack
		read  map[int32][]stored
		want  string
	}{
		"missing": {acked, map[int32][]stored{0: good[0][:2], 1: good[1]}, "sequence 5 (offset 2) is missing"},
		"moved": {acked, map[int32][]stored{
			0: {{0, seqValue(1)}, {1, seqValue(9)}, {2, seqValue(5)}, {3, seqValue(3)}},
			1: good[1],
		}, "sequence 3 at offset 1, found at"},
		"duplicate": {acked, map[int32][]stored{0: good[0], 1: append(good[1][:2:2], stored{2, seqValue(7)})}, "sequence 7 stored 2 times"},
		"order":     {map[int32][]ack{0: {{3, 1}, {1, 0}}}, good, "acknowledged at offset 0 after offset 1"},
		"garbage":   {acked, map[int32][]stored{0: append(good[0][:4:4], stored{4, []byte("x")}), 1: good[1]}, "not a sequence number"},
	} {
		t.Run(name, func(t *testing.T) {
			problems := checkAcked(tc.acked, tc.read)
			if !strings.Contains(strings.Join(problems, "\n"), tc.want) {
				t.Fatalf("problems %q do not mention %q", problems, tc.want)
			}
		})
	}
}
