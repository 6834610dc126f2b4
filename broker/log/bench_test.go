package log

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkAppend appends 16 KiB batches of 100 records as a leader.
func BenchmarkAppend(b *testing.B) {
	l, _ := newLog(b, DefaultConfig())
	batch := makeBatch(b, batchSpec{n: 100, ts: 1, pid: -1, epoch: -1, seq: -1, valueSz: 150})
	b.SetBytes(int64(len(batch)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := l.AppendAsLeader(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRead looks up 1 MiB fetch regions at random offsets of a
// multi-segment log; the bytes counted are those the caller would send.
func BenchmarkRead(b *testing.B) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 16 << 20
	l, _ := newLog(b, cfg)
	for range 4000 {
		batch := makeBatch(b, batchSpec{n: 20, ts: 1, pid: -1, epoch: -1, seq: -1, valueSz: 100})
		if _, err := l.AppendAsLeader(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
	leo := l.LogEndOffset()
	rng := rand.New(rand.NewPCG(1, 2))
	var total int64
	b.ResetTimer()
	for b.Loop() {
		r, err := l.Read(rng.Int64N(leo), 1<<20, leo, true)
		if err != nil {
			b.Fatal(err)
		}
		total += r.Len
		r.Release()
	}
	b.SetBytes(total / int64(b.N))
}
