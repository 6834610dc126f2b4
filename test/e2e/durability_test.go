package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/internal/batch"
)

// ack is one acknowledged record: where the broker said it put sequence seq.
type ack struct {
	offset int64
	seq    int32
}

// stream produces values "<name>-<seq>" to a topic, sequence seq to partition
// seq % parts, and remembers every acknowledgement.
type stream struct {
	name, topic string
	parts       int32

	mu     sync.Mutex
	acks   [][]ack // by partition
	acked  atomic.Int64
	failed atomic.Int64
	errMu  sync.Mutex
	err    error // the first produce error
}

func newStream(name string, parts int32) *stream {
	return &stream{name: name, topic: "durable-" + name, parts: parts, acks: make([][]ack, parts)}
}

func (s *stream) record(seq int) *kgo.Record {
	return &kgo.Record{
		Topic:     s.topic,
		Partition: int32(seq) % s.parts,
		Value:     fmt.Appendf(nil, "%s-%09d", s.name, seq),
	}
}

func (s *stream) seqOf(v []byte) (int32, error) {
	if len(v) != len(s.name)+10 || string(v[:len(s.name)+1]) != s.name+"-" {
		return 0, fmt.Errorf("value %q is not a %s record", v, s.name)
	}
	n, err := strconv.Atoi(string(v[len(s.name)+1:]))
	return int32(n), err
}

func (s *stream) produce(ctx context.Context, cl *kgo.Client, seq int) {
	cl.Produce(ctx, s.record(seq), func(r *kgo.Record, err error) {
		if err != nil {
			s.failed.Add(1)
			s.errMu.Lock()
			if s.err == nil {
				s.err = fmt.Errorf("seq %d: %w", seq, err)
			}
			s.errMu.Unlock()
			return
		}
		s.mu.Lock()
		s.acks[r.Partition] = append(s.acks[r.Partition], ack{offset: r.Offset, seq: int32(seq)})
		s.mu.Unlock()
		s.acked.Add(1)
	})
}

func (s *stream) firstErr() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.err
}

// partitionLog is what a partition holds: the sequence at each offset from 0.
type partitionLog []int32

// readAll consumes [0, end) of partition p, checking every value belongs to s.
func (s *stream) readAll(t testing.TB, b *broker, p int32, end int64) partitionLog {
	t.Helper()
	out := make(partitionLog, 0, end)
	if end == 0 {
		return out
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.topic: {p: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxPartitionBytes(8<<20), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testCtx(t, 5*time.Minute)
	for int64(len(out)) < end {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s/%d: read %d of %d records before the deadline", s.topic, p, len(out), end)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("%s/%d: %v", e.Topic, e.Partition, e.Err)
		}
		for it := fs.RecordIter(); !it.Done(); {
			r := it.Next()
			if r.Offset != int64(len(out)) {
				t.Fatalf("%s/%d: record at offset %d after %d records (a gap or a repeat)", s.topic, p, r.Offset, len(out))
			}
			if r.Offset >= end {
				t.Fatalf("%s/%d: record at offset %d beyond the high watermark %d", s.topic, p, r.Offset, end)
			}
			seq, err := s.seqOf(r.Value)
			if err != nil {
				t.Fatalf("%s/%d offset %d: %v", s.topic, p, r.Offset, err)
			}
			if seq%s.parts != p {
				t.Fatalf("%s/%d offset %d holds seq %d of partition %d", s.topic, p, r.Offset, seq, seq%s.parts)
			}
			out = append(out, seq)
		}
	}
	return out
}

// verify reads every partition and checks the promise: each acknowledged record is
// at its acknowledged offset, exactly once, in the order it was produced; with
// noDuplicates no sequence (acknowledged or not) appears twice.
func (s *stream) verify(t testing.TB, b *broker, adm *kadm.Client, noDuplicates bool) []partitionLog {
	t.Helper()
	end, err := endOffsets(testCtx(t, 30*time.Second), adm, s.topic)
	if err != nil {
		t.Fatal(err)
	}
	logs := make([]partitionLog, s.parts)
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := range s.parts {
		logs[p] = s.readAll(t, b, p, end[p])
		seen := map[int32]int{}
		for _, seq := range logs[p] {
			seen[seq]++
		}
		acks := slices.Clone(s.acks[p])
		slices.SortFunc(acks, func(a, b ack) int { return int(a.seq - b.seq) })
		for i, a := range acks {
			if a.offset >= int64(len(logs[p])) {
				t.Fatalf("%s/%d: acknowledged seq %d at offset %d is gone (high watermark %d)", s.topic, p, a.seq, a.offset, len(logs[p]))
			}
			if got := logs[p][a.offset]; got != a.seq {
				t.Fatalf("%s/%d: offset %d holds seq %d, acknowledged for seq %d", s.topic, p, a.offset, got, a.seq)
			}
			if n := seen[a.seq]; n != 1 {
				t.Fatalf("%s/%d: acknowledged seq %d appears %d times", s.topic, p, a.seq, n)
			}
			if i > 0 && acks[i-1].offset >= a.offset {
				t.Fatalf("%s/%d: seq %d at offset %d is not after seq %d at offset %d", s.topic, p, a.seq, a.offset, acks[i-1].seq, acks[i-1].offset)
			}
		}
		extra := len(logs[p]) - len(acks)
		if noDuplicates {
			for seq, n := range seen {
				if n > 1 {
					t.Fatalf("%s/%d: seq %d appears %d times from an idempotent producer", s.topic, p, seq, n)
				}
			}
		}
		t.Logf("%s/%d: %d records, %d acknowledged, %d present but unacknowledged", s.topic, p, len(logs[p]), len(acks), extra)
	}
	return logs
}

// TestDurabilityKillRestartAndDamage is the process-level durability promise:
// records acknowledged before a SIGKILL are all there, exactly once and in order,
// after a restart; an idempotent producer carries on across the restart without
// duplicates; and a damaged segment tail with missing or garbled indexes recovers
// to exactly the records before the damage.
func TestDurabilityKillRestartAndDamage(t *testing.T) {
	n1, nAll := 1_000_000, 100_000
	if short() {
		n1, nAll = 200_000, 20_000
	}
	b := startBroker(t)
	adm := b.Admin(t)
	one, all := newStream("acks1", 2), newStream("acksall", 2)
	for _, s := range []*stream{one, all} {
		// Small segments: recovery works across many segments, not one.
		createTopic(t, adm, s.topic, s.parts, map[string]*string{"segment.bytes": kadm.StringPtr("131072")})
	}

	newProducer := func(opts ...kgo.Opt) *kgo.Client {
		// Batches must fit a segment (a larger one is RECORD_LIST_TOO_LARGE).
		opts = append([]kgo.Opt{kgo.SeedBrokers(b.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProducerBatchMaxBytes(64 << 10)}, opts...)
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	// acks=1 cannot be idempotent in kgo; the producer stops at the kill, so no
	// retry can duplicate an acknowledged record.
	p1 := newProducer(kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	// acks=all, idempotent, kept running across the restart; uncompressed, while the
	// acks=1 stream uses kgo's default codec.
	pAll := newProducer(kgo.ProducerBatchCompression(kgo.NoCompression()))
	defer pAll.Close()

	ctx := testCtx(t, 15*time.Minute)
	ctx1, stop1 := context.WithCancel(ctx)
	defer stop1()
	// The acks=all stream sends one record per ten of the acks=1 stream while both
	// run, so the kill lands in the middle of both.
	tokens := make(chan struct{}, n1/10+1)
	var next1 atomic.Int64
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer close(tokens)
		for seq := 0; seq < n1 && ctx1.Err() == nil; seq++ {
			one.produce(ctx1, p1, seq)
			next1.Store(int64(seq) + 1)
			if seq%10 == 0 {
				tokens <- struct{}{}
			}
		}
	}()
	allDone := make(chan struct{})
	go func() {
		defer wg.Done()
		defer close(allDone)
		throttled := true
		for seq := 0; seq < nAll && ctx.Err() == nil; seq++ {
			if throttled {
				if _, ok := <-tokens; !ok {
					throttled = false
				}
			}
			all.produce(ctx, pAll, seq)
		}
	}()
	defer wg.Wait()

	eventually(t, 10*time.Minute, func() error {
		if err := one.firstErr(); err != nil {
			t.Fatalf("acks=1 produce before the kill: %v", err)
		}
		if a, w := one.acked.Load(), int64(n1/2); a < w || all.acked.Load() == 0 {
			return fmt.Errorf("acks=1: %d of %d acknowledged; acks=all: %d", a, w, all.acked.Load())
		}
		return nil
	})
	b.Kill(t)
	t.Logf("SIGKILL with %d acks=1 and %d acks=all records acknowledged", one.acked.Load(), all.acked.Load())

	// Stop the acks=1 producer for good before the broker comes back.
	stop1()
	for range tokens {
	}
	abortCtx, cancelAbort := context.WithTimeout(ctx, time.Minute)
	if err := p1.AbortBufferedRecords(abortCtx); err != nil {
		t.Fatalf("aborting the acks=1 producer: %v", err)
	}
	cancelAbort()
	p1.Close()
	ackedBefore := one.acked.Load()

	b.Restart(t)

	// The rest of the acks=1 records, new sequence numbers, from a new producer.
	p1b := newProducer(kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	from := int(next1.Load())
	one.errMu.Lock()
	one.err = nil
	one.errMu.Unlock()
	failedBefore := one.failed.Load()
	for seq := from; seq < n1; seq++ {
		one.produce(ctx, p1b, seq)
	}
	if err := p1b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	p1b.Close()
	if n := one.failed.Load() - failedBefore; n != 0 {
		t.Fatalf("%d acks=1 records failed after the restart: %v", n, one.firstErr())
	}
	select {
	case <-allDone:
	case <-ctx.Done():
		t.Fatal("acks=all producer did not finish")
	}
	if err := pAll.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := all.failed.Load(); n != 0 {
		t.Fatalf("%d records of the idempotent acks=all producer failed across the restart: %v", n, all.firstErr())
	}
	if got := all.acked.Load(); got != int64(nAll) {
		t.Fatalf("acks=all: %d of %d acknowledged", got, nAll)
	}
	t.Logf("acks=1: %d acknowledged before the kill, %d in total (of %d sent)", ackedBefore, one.acked.Load(), n1)

	logs1 := one.verify(t, b, adm, false)
	logsAll := all.verify(t, b, adm, true)
	if t.Failed() {
		return
	}

	// Crash again and damage the partitions' files, a different way in each.
	b.Kill(t)
	rng := rand.New(rand.NewPCG(5, 6))
	intact := map[string]int64{}
	damage := []struct {
		s    *stream
		p    int32
		what string
		do   func(dir string, segs []string)
	}{
		{one, 0, "last segment cut by 7 bytes; its .index and .timeindex deleted", func(dir string, segs []string) {
			last := segs[len(segs)-1]
			truncateBy(t, last, 7)
			removeIndexes(t, last)
		}},
		{one, 1, "garbage appended to the last segment; its indexes garbled; a middle segment's .index deleted", func(dir string, segs []string) {
			last := segs[len(segs)-1]
			appendBytes(t, last, randomBytes(rng, 100))
			garble(t, rng, indexOf(last, ".index"))
			garble(t, rng, indexOf(last, ".timeindex"))
			if len(segs) >= 2 {
				mustRemove(t, indexOf(segs[(len(segs)-1)/2], ".index"))
			}
		}},
		{all, 0, "last segment cut in the middle of a batch; every index file deleted", func(dir string, segs []string) {
			last := segs[len(segs)-1]
			fi, err := os.Stat(last)
			if err != nil {
				t.Fatal(err)
			}
			truncateBy(t, last, fi.Size()/3)
			for _, s := range segs {
				removeIndexes(t, s)
			}
		}},
		{all, 1, "a plausible batch header with a bad CRC appended; a middle segment's .timeindex cut to a partial entry", func(dir string, segs []string) {
			last := segs[len(segs)-1]
			fake := binary.BigEndian.AppendUint64(nil, uint64(len(logsAll[1])))
			fake = binary.BigEndian.AppendUint32(fake, 80)
			fake = append(fake, 0, 0, 0, 0, 2)
			fake = append(fake, randomBytes(rng, 80-5)...)
			appendBytes(t, last, fake)
			if len(segs) >= 2 {
				ti := indexOf(segs[(len(segs)-1)/2], ".timeindex")
				if fi, err := os.Stat(ti); err == nil && fi.Size() > 5 {
					if err := os.Truncate(ti, fi.Size()-5); err != nil {
						t.Fatal(err)
					}
				}
			}
		}},
	}
	for _, d := range damage {
		dir := filepath.Join(b.Dir(), fmt.Sprintf("%s-%d", d.s.topic, d.p))
		segs := segments(t, dir)
		d.do(dir, segs)
		end, err := intactEnd(segs[len(segs)-1])
		if err != nil {
			t.Fatal(err)
		}
		intact[fmt.Sprintf("%s-%d", d.s.topic, d.p)] = end
		t.Logf("%s/%d: %s; %d segments; intact to offset %d", d.s.topic, d.p, d.what, len(segs), end)
	}

	b.Restart(t)
	for _, c := range []struct {
		s    *stream
		logs []partitionLog
	}{{one, logs1}, {all, logsAll}} {
		for p := range c.s.parts {
			want := intact[fmt.Sprintf("%s-%d", c.s.topic, p)]
			if want > int64(len(c.logs[p])) {
				t.Fatalf("%s/%d: intact end %d beyond the %d records read before the damage", c.s.topic, p, want, len(c.logs[p]))
			}
			eventually(t, time.Minute, func() error {
				end, err := endOffsets(testCtx(t, 10*time.Second), adm, c.s.topic)
				if err != nil {
					return err
				}
				if end[p] > want {
					t.Fatalf("%s/%d: high watermark %d after recovery, but the data is intact only to %d", c.s.topic, p, end[p], want)
				}
				if end[p] != want {
					return fmt.Errorf("%s/%d: high watermark %d, want %d", c.s.topic, p, end[p], want)
				}
				return nil
			})
			got := c.s.readAll(t, b, p, want)
			if !slices.Equal(got, c.logs[p][:want]) {
				for i := range got {
					if got[i] != c.logs[p][i] {
						t.Fatalf("%s/%d: offset %d holds seq %d after recovery, %d before", c.s.topic, p, i, got[i], c.logs[p][i])
					}
				}
			}
			// Reads that start mid-log go through the rebuilt indexes.
			for range 20 {
				off := rng.Int64N(want)
				r := recordAt(t, b, c.s.topic, p, off)
				if seq, err := c.s.seqOf(r.Value); err != nil || r.Offset != off || seq != c.logs[p][off] {
					t.Fatalf("%s/%d: fetch at %d returned offset %d %q (%v), want seq %d", c.s.topic, p, off, r.Offset, r.Value, err, c.logs[p][off])
				}
			}
		}
	}

	// The recovered logs take new writes right after the cut.
	prod := b.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, s := range []*stream{one, all} {
		for p := range s.parts {
			r := s.record(int(p) + 2*n1)
			if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce to %s/%d after recovery: %v", s.topic, p, err)
			}
			if want := intact[fmt.Sprintf("%s-%d", s.topic, p)]; r.Offset != want {
				t.Errorf("%s/%d: first record after recovery at offset %d, want %d", s.topic, p, r.Offset, want)
			}
		}
	}
}

// recordAt consumes the record at offset with a fresh consumer.
func recordAt(t testing.TB, b *broker, topic string, p int32, offset int64) *kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(offset)}}),
		kgo.FetchMaxPartitionBytes(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testCtx(t, 30*time.Second)
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s/%d: nothing fetched at offset %d", topic, p, offset)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("%s/%d at %d: %v", e.Topic, e.Partition, offset, e.Err)
		}
		if rs := fs.Records(); len(rs) > 0 {
			return rs[0]
		}
	}
}

// segments lists a partition's .log files in offset order.
func segments(t testing.TB, dir string) []string {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("no segments in %s (%v)", dir, err)
	}
	slices.Sort(segs) // names are zero-padded base offsets
	return segs
}

func indexOf(seg, ext string) string { return seg[:len(seg)-len(".log")] + ext }

func removeIndexes(t testing.TB, seg string) {
	t.Helper()
	for _, ext := range []string{".index", ".timeindex"} {
		if err := os.Remove(indexOf(seg, ext)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
}

func mustRemove(t testing.TB, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

func truncateBy(t testing.TB, path string, n int64) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, max(0, fi.Size()-n)); err != nil {
		t.Fatal(err)
	}
}

func appendBytes(t testing.TB, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

// garble overwrites a file with random bytes of the same size (or writes 24 random
// bytes where it is missing or empty).
func garble(t testing.TB, rng *rand.Rand, path string) {
	t.Helper()
	size := int64(24)
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		size = fi.Size()
	}
	if err := os.WriteFile(path, randomBytes(rng, int(size)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// intactEnd walks a segment's batches and returns the offset after the last batch
// that is whole and passes its CRC: what recovery must keep.
func intactEnd(seg string) (int64, error) {
	data, err := os.ReadFile(seg)
	if err != nil {
		return 0, err
	}
	var base int64
	if _, err := fmt.Sscanf(filepath.Base(seg), "%020d.log", &base); err != nil {
		return 0, fmt.Errorf("segment name %s: %w", seg, err)
	}
	end := base
	for pos := 0; pos+61 <= len(data); {
		n := int(int32(binary.BigEndian.Uint32(data[pos+8:])))
		if n < 49 || pos+12+n > len(data) || data[pos+16] != 2 {
			break
		}
		bt := data[pos : pos+batch.LogOverhead+n]
		if crc32c(bt[batch.OffAttributes:]) != binary.BigEndian.Uint32(bt[batch.OffCRC:]) {
			break
		}
		first := int64(binary.BigEndian.Uint64(bt))
		if first != end && end != base {
			break
		}
		end = first + int64(int32(binary.BigEndian.Uint32(bt[batch.OffLastOffsetDelta:]))) + 1
		pos += 12 + n
	}
	return end, nil
}
