package log

import (
	"encoding/binary"
	"testing"

	"github.com/ktoolhq/ktool/internal/batch"
)

// resequence rewrites a batch's base sequence and its CRC, so one buffer can
// be appended again as the producer's next batch.
func resequence(b []byte, seq int32) {
	binary.BigEndian.PutUint32(b[batch.OffBaseSequence:], uint32(seq))
	binary.BigEndian.PutUint32(b[batch.OffCRC:], batch.Checksum(b))
}

// TestIdempotentAppendAllocatesNoMoreThanPlain: the producer's entry is
// updated in place once its batch is in the log, so an idempotent append
// allocates no more than the same batch without a producer id (at 64
// partitions of small batches, franz-go's default idempotent producer made
// two allocations per partition a request when the entry was copied first).
func TestIdempotentAppendAllocatesNoMoreThanPlain(t *testing.T) {
	l, _ := newLog(t, testConfig())
	const n = 10
	pb := makeBatch(t, plain(n, 1000))
	ib := makeBatch(t, idem(1, 0, 0, n))
	seq := int32(0)
	for range maxProducerBatches + 1 { // the entry exists and its window is full
		resequence(ib, seq)
		mustAppend(t, l, ib, 0)
		seq += n
	}
	plainAllocs := testing.AllocsPerRun(200, func() {
		if _, err := l.AppendAsLeader(pb, 0); err != nil {
			t.Fatal(err)
		}
	})
	idemAllocs := testing.AllocsPerRun(200, func() {
		resequence(ib, seq)
		seq += n
		if _, err := l.AppendAsLeader(ib, 0); err != nil {
			t.Fatal(err)
		}
	})
	if idemAllocs > plainAllocs {
		t.Fatalf("idempotent append: %.1f allocations, plain: %.1f", idemAllocs, plainAllocs)
	}
}
