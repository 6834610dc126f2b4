package log

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkAppend appends 16 KiB batches of 100 records as a leader.
func BenchmarkAppend(b *testing.B) {
	l, _ := newLog(b, DefaultConfig())
	bt := makeBatch(b, batchSpec{n: 100, ts: 1, pid: -1, epoch: -1, seq: -1, valueSz: 150})
	b.SetBytes(int64(len(bt)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := l.AppendAsLeader(bt, 0); err != nil {
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
		bt := makeBatch(b, batchSpec{n: 20, ts: 1, pid: -1, epoch: -1, seq: -1, valueSz: 100})
		if _, err := l.AppendAsLeader(bt, 0); err != nil {
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

// BenchmarkClean runs one cleaning pass over a log whose 1000 keys were each
// written 40 times (4 MiB before compression); the bytes counted are the
// log's.
func BenchmarkClean(b *testing.B) {
	for _, c := range []struct {
		name  string
		codec int8
	}{{"none", 0}, {"zstd", 4}} {
		b.Run(c.name, func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.CleanupPolicy = PolicyCompact
			cfg.SegmentBytes = 64 << 10
			var batches [][]byte
			for r := range 40 {
				for k := 0; k < 1000; k += 50 {
					var recs []kv
					for i := range 50 {
						recs = append(recs, put(fmt.Sprintf("key-%04d", k+i), fmt.Sprintf("value-%02d-%s", r, strings.Repeat("x", 60))))
					}
					s := keyed(1, recs...)
					s.codec = c.codec
					batches = append(batches, keyedBatch(b, s))
				}
			}
			for b.Loop() {
				b.StopTimer()
				l, err := Open(filepath.Join(b.TempDir(), "topic-0"), cfg, nil)
				if err != nil {
					b.Fatal(err)
				}
				for _, bt := range batches {
					if _, err := l.AppendAsLeader(append([]byte(nil), bt...), 0); err != nil {
						b.Fatal(err)
					}
				}
				l.SetHighWatermark(l.LogEndOffset())
				b.SetBytes(l.Size())
				b.StartTimer()
				res, err := l.Clean(context.Background())
				if err != nil || res.RecordsRemoved == 0 {
					b.Fatalf("clean: %+v, %v", res, err)
				}
				b.StopTimer()
				if err := l.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkAppendSync appends one 1 KiB record and syncs it, as
// flush.messages=1 does for a producer that waits for each answer: compare
// with dd bs=1024 oflag=dsync on the same disk.
func BenchmarkAppendSync(b *testing.B) {
	cfg := DefaultConfig()
	cfg.FlushIntervalMessages = 1
	l, _ := newLog(b, cfg)
	bt := makeBatch(b, batchSpec{n: 1, ts: 1, pid: -1, epoch: -1, seq: -1, valueSz: 1024})
	b.SetBytes(int64(len(bt)))
	for b.Loop() {
		res, err := l.AppendAsLeader(bt, 0)
		if err == nil {
			err = l.Sync(res.LastOffset + 1)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendIdempotent appends small batches (10 records of 100 bytes)
// of one idempotent producer, each the next sequence: the shape of
// franz-go's default producer at many partitions, where the per-batch
// producer state counts.
func BenchmarkAppendIdempotent(b *testing.B) {
	l, _ := newLog(b, DefaultConfig())
	const n = 10
	bt := makeBatch(b, batchSpec{n: n, ts: 1, pid: 1, epoch: 0, seq: 0, valueSz: 100})
	b.SetBytes(int64(len(bt)))
	b.ReportAllocs()
	seq := int32(0)
	for b.Loop() {
		resequence(bt, seq)
		seq += n
		if _, err := l.AppendAsLeader(bt, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRewriteCheckpoint rewrites one offset checkpoint, as the broker
// does for each partition whose high watermark moved every
// replica.high.watermark.checkpoint.interval.ms: with a temporary file
// renamed over it (a new inode each time, the old one deleted) and with the
// spare exchanged for it (rewriteCheckpoint). Both fsync the file and the
// directory; the difference is the file system's inode allocation.
func BenchmarkRewriteCheckpoint(b *testing.B) {
	for _, spare := range []bool{false, true} {
		name := "rename"
		if spare {
			name = "exchange"
		}
		b.Run(name, func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "t-0")
			if err := os.Mkdir(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			off := int64(0)
			for b.Loop() {
				off++
				if err := replaceAtomic(dir, highWatermarkFile, encodeOffsetCheckpoint(dir, off), spare); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOpenAfterCrash opens 1,000 partition logs left by a killed
// broker, one after the other, as a broker's start-up does with each of its
// partition directories: empty ones, and ones holding one flushed batch.
func BenchmarkOpenAfterCrash(b *testing.B) {
	const parts = 1000
	for _, written := range []bool{false, true} {
		name := "empty"
		if written {
			name = "one-batch"
		}
		b.Run(name, func(b *testing.B) {
			root := b.TempDir()
			cfg := DefaultConfig()
			cfg.Codecs = testCodecs
			bt := makeBatch(b, plain(10, 1))
			dirs := make([]string, parts)
			for i := range dirs {
				dirs[i] = filepath.Join(root, fmt.Sprintf("t-%d", i))
				l, err := Open(dirs[i], cfg, nil)
				if err != nil {
					b.Fatal(err)
				}
				if written {
					if _, err := l.AppendAsLeader(bt, 0); err != nil {
						b.Fatal(err)
					}
					if err := l.Flush(); err != nil {
						b.Fatal(err)
					}
				}
				crash(l)
			}
			b.ReportAllocs()
			for b.Loop() {
				for _, dir := range dirs {
					l, err := Open(dir, cfg, nil)
					if err != nil {
						b.Fatal(err)
					}
					crash(l)
				}
			}
		})
	}
}
