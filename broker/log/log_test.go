package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/internal/batch"
)

func TestAppendReadRoundTrip(t *testing.T) {
	l, _ := newLog(t, testConfig())
	var want []byte
	next := int64(0)
	for i := range 20 {
		b := makeBatch(t, plain(1+i%4, int64(1000+i)))
		res := mustAppend(t, l, b, 3)
		h := headers(t, b)[0]
		if res.BaseOffset != next || h.BaseOffset != next {
			t.Fatalf("batch %d: base offset %d (in place %d), want %d", i, res.BaseOffset, h.BaseOffset, next)
		}
		if h.PartitionLeaderEpoch != 3 {
			t.Fatalf("leader epoch in place = %d", h.PartitionLeaderEpoch)
		}
		if res.LastOffset != next+int64(h.NumRecords)-1 || res.NumRecords != int(h.NumRecords) || res.LogAppendTime != -1 {
			t.Fatalf("result %+v", res)
		}
		next = res.LastOffset + 1
		want = append(want, b...)
	}
	if l.LogEndOffset() != next {
		t.Fatalf("LEO %d, want %d", l.LogEndOffset(), next)
	}
	if got := readAll(t, l, 0); !bytes.Equal(got, want) {
		t.Fatal("read back differs from what was appended")
	}
	if l.Size() != int64(len(want)) {
		t.Fatalf("size %d, want %d", l.Size(), len(want))
	}
	if l.LatestEpoch() != 3 {
		t.Fatalf("latest epoch %d", l.LatestEpoch())
	}
}

// TestAppendRefusesSeveralBatches: Produce v3 and later carry one batch per
// partition, and Kafka's leader refuses more with INVALID_RECORD.
func TestAppendRefusesSeveralBatches(t *testing.T) {
	l, dir := newLog(t, testConfig())
	records := append(makeBatch(t, plain(2, 10)), makeBatch(t, plain(3, 20))...)
	_, err := l.AppendAsLeader(records, 0)
	wantKerr(t, err, kerr.InvalidRecord)
	if l.LogEndOffset() != 0 || fileSize(t, segmentPath(dir, 0, logExt)) != 0 {
		t.Fatal("a refused append wrote something")
	}
	res := mustAppend(t, l, records[:len(makeBatch(t, plain(2, 10)))], 0)
	if res.BaseOffset != 0 || res.LastOffset != 1 || res.NumRecords != 2 {
		t.Fatalf("result %+v", res)
	}
}

func TestLogAppendTime(t *testing.T) {
	clock := newClock()
	cfg := testConfig()
	cfg.TimestampType = LogAppendTime
	cfg.Now = clock.Now
	l, _ := newLog(t, cfg)
	b := makeBatch(t, plain(3, 5))
	res := mustAppend(t, l, b, 0)
	now := clock.now.UnixMilli()
	if res.LogAppendTime != now {
		t.Fatalf("log append time %d, want %d", res.LogAppendTime, now)
	}
	h := headers(t, b)[0] // also checks the recomputed CRC
	if !h.LogAppendTime() || h.MaxTimestamp != now || h.FirstTimestamp != now {
		t.Fatalf("header %+v", h)
	}
	if off, ts := l.MaxTimestamp(); off != 0 || ts != now {
		t.Fatalf("max timestamp (%d, %d)", off, ts)
	}
}

func TestAppendRejectsBadBatches(t *testing.T) {
	cfg := testConfig()
	cfg.MaxMessageBytes = 400
	l, dir := newLog(t, cfg)
	good := makeBatch(t, plain(1, 0))

	badCRC := bytes.Clone(good)
	badCRC[len(badCRC)-1] ^= 0xff
	badMagic := bytes.Clone(good)
	badMagic[batch.OffMagic] = 1
	badCount := bytes.Clone(good)
	binary.BigEndian.PutUint32(badCount[batch.OffNumRecords:], 2)
	binary.BigEndian.PutUint32(badCount[batch.OffCRC:], batch.Checksum(badCount))
	control := bytes.Clone(good)
	binary.BigEndian.PutUint16(control[batch.OffAttributes:], batch.AttrControl)
	binary.BigEndian.PutUint32(control[batch.OffCRC:], batch.Checksum(control))
	codec := bytes.Clone(good)
	binary.BigEndian.PutUint16(codec[batch.OffAttributes:], 7)
	binary.BigEndian.PutUint32(codec[batch.OffCRC:], batch.Checksum(codec))

	for _, tc := range []struct {
		name string
		b    []byte
		want *kerr.Error
	}{
		{"crc", badCRC, kerr.CorruptMessage},
		{"magic", badMagic, kerr.CorruptMessage},
		{"count", badCount, kerr.InvalidRecord}, // Kafka: "Inconsistent batch offset range and count of records"
		{"torn", good[:len(good)-1], kerr.CorruptMessage},
		{"trailing", append(bytes.Clone(good), 1, 2, 3), kerr.CorruptMessage},
		{"empty", nil, kerr.InvalidRecord},
		{"too large", makeBatch(t, batchSpec{n: 1, pid: -1, epoch: -1, seq: -1, valueSz: 500}), kerr.MessageTooLarge},
		{"control", control, kerr.InvalidRecord},
		{"codec", codec, kerr.UnsupportedCompressionType},
		{"good then bad", append(bytes.Clone(good), badCRC...), kerr.CorruptMessage},
		{"two good", append(bytes.Clone(good), good...), kerr.InvalidRecord},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := l.AppendAsLeader(tc.b, 0)
			wantKerr(t, err, tc.want)
			if l.LogEndOffset() != 0 || fileSize(t, segmentPath(dir, 0, logExt)) != 0 {
				t.Fatal("a rejected append wrote something")
			}
		})
	}
}

func TestTimestampDifference(t *testing.T) {
	clock := newClock()
	cfg := testConfig()
	cfg.Now = clock.Now
	cfg.MessageTimestampDifferenceMaxMs = 1000
	l, _ := newLog(t, cfg)
	_, err := l.AppendAsLeader(makeBatch(t, plain(1, clock.now.UnixMilli()-5000)), 0)
	wantKerr(t, err, kerr.InvalidTimestamp)
	mustAppend(t, l, makeBatch(t, plain(1, clock.now.UnixMilli()-500)), 0)
}

func TestRollBySize(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1000
	l, dir := newLog(t, cfg)
	var want []byte
	for i := range 30 {
		b := makeBatch(t, plain(2, int64(i)))
		mustAppend(t, l, b, 0)
		want = append(want, b...)
	}
	bases := segmentFiles(t, dir)
	if len(bases) < 3 {
		t.Fatalf("segments %v, want several", bases)
	}
	for _, base := range bases {
		if fileSize(t, segmentPath(dir, base, logExt)) > cfg.SegmentBytes {
			t.Fatalf("segment %d larger than segment.bytes", base)
		}
	}
	// One Read covers one segment only.
	r, err := l.Read(0, 1<<20, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	if r.Len > cfg.SegmentBytes {
		t.Fatalf("region of %d bytes spans segments", r.Len)
	}
	r.Release()
	if !bytes.Equal(readAll(t, l, 0), want) {
		t.Fatal("read back across segments differs")
	}
	// Reads starting inside later segments find their batch.
	got := readAll(t, l, 37)
	if h := headers(t, got)[0]; h.BaseOffset != 36 {
		t.Fatalf("read at 37 starts at batch %d", h.BaseOffset)
	}
}

func segmentFiles(t testing.TB, dir string) []int64 {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*"+logExt))
	if err != nil {
		t.Fatal(err)
	}
	var bases []int64
	for _, n := range names {
		if b, ok := segmentBase(filepath.Base(n), logExt); ok {
			bases = append(bases, b)
		}
	}
	return bases
}

func TestRollByTime(t *testing.T) {
	clock := newClock()
	cfg := testConfig()
	cfg.SegmentMs = 1000
	cfg.Now = clock.Now
	l, dir := newLog(t, cfg)
	ts := clock.now.UnixMilli()
	mustAppend(t, l, makeBatch(t, plain(1, ts)), 0)
	mustAppend(t, l, makeBatch(t, plain(1, ts+500)), 0)
	if n := len(segmentFiles(t, dir)); n != 1 {
		t.Fatalf("%d segments before segment.ms", n)
	}
	mustAppend(t, l, makeBatch(t, plain(1, ts+1500)), 0)
	if bases := segmentFiles(t, dir); len(bases) != 2 || bases[1] != 2 {
		t.Fatalf("segments %v after segment.ms, want [0 2]", bases)
	}
	// A rolled segment leaves a producer snapshot at its end.
	if _, err := os.Stat(segmentPath(dir, 2, snapshotExt)); err != nil {
		t.Fatal(err)
	}
}

func TestReadLimits(t *testing.T) {
	l, _ := newLog(t, testConfig())
	var sizes []int64
	for i := range 5 {
		b := makeBatch(t, plain(3, int64(i)))
		mustAppend(t, l, b, 0)
		sizes = append(sizes, int64(len(b)))
	}
	leo := l.LogEndOffset()
	read := func(off int64, maxBytes int32, maxOff int64, minOne bool) Region {
		t.Helper()
		r, err := l.Read(off, maxBytes, maxOff, minOne)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Release)
		return r
	}
	if r := read(0, int32(sizes[0]+sizes[1]), leo, false); r.Len != sizes[0]+sizes[1] || r.Pos != 0 {
		t.Fatalf("two batches: pos %d len %d", r.Pos, r.Len)
	}
	if r := read(0, int32(sizes[0]+sizes[1]-1), leo, false); r.Len != sizes[0] {
		t.Fatalf("maxBytes just under two batches: len %d", r.Len)
	}
	if r := read(0, 10, leo, false); r.Len != 0 {
		t.Fatalf("maxBytes below one batch without minOneBatch: len %d", r.Len)
	}
	if r := read(0, 10, leo, true); r.Len != sizes[0] {
		t.Fatalf("minOneBatch: len %d", r.Len)
	}
	if r := read(4, 1<<20, leo, true); r.Pos != sizes[0] {
		t.Fatalf("offset 4 starts at %d, want the batch at %d", r.Pos, sizes[0])
	}
	if r := read(0, 1<<20, 6, true); r.Len != sizes[0]+sizes[1] {
		t.Fatalf("maxOffset 6: len %d", r.Len)
	}
	if r := read(6, 1<<20, 6, true); r.Len != 0 {
		t.Fatalf("at maxOffset: len %d", r.Len)
	}
	if r := read(leo, 1<<20, leo, true); r.Len != 0 {
		t.Fatalf("at LEO: len %d", r.Len)
	}
	_, err := l.Read(leo+1, 1<<20, leo, true)
	wantKerr(t, err, kerr.OffsetOutOfRange)
	_, err = l.Read(-1, 1<<20, leo, true)
	wantKerr(t, err, kerr.OffsetOutOfRange)
}

func TestReadSeesOnlyWholeBatches(t *testing.T) {
	l, _ := newLog(t, testConfig())
	done := make(chan error)
	go func() {
		for i := range 200 {
			if _, err := l.AppendAsLeader(makeBatch(t, plain(1+i%5, int64(i))), 0); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for finished := false; !finished; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished = true
		default:
		}
		r, err := l.Read(0, 1<<30, l.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		if r.Len > 0 {
			headers(t, regionBytes(t, r))
		}
		r.Release()
	}
}

func TestIdempotentProducer(t *testing.T) {
	l, dir := newLog(t, testConfig())
	const pid = 7
	first := mustAppend(t, l, makeBatch(t, idem(pid, 0, 0, 3)), 0)
	second := mustAppend(t, l, makeBatch(t, idem(pid, 0, 3, 2)), 0)
	if second.BaseOffset != 3 {
		t.Fatalf("second batch at %d", second.BaseOffset)
	}

	dup, err := l.AppendAsLeader(makeBatch(t, idem(pid, 0, 0, 3)), 0)
	if err != nil || !dup.Duplicate || dup.BaseOffset != first.BaseOffset || dup.LastOffset != first.LastOffset {
		t.Fatalf("duplicate: %+v, %v", dup, err)
	}
	if l.LogEndOffset() != 5 {
		t.Fatalf("duplicate was appended: LEO %d", l.LogEndOffset())
	}

	_, err = l.AppendAsLeader(makeBatch(t, idem(pid, 0, 9, 1)), 0)
	wantKerr(t, err, kerr.OutOfOrderSequenceNumber)
	_, err = l.AppendAsLeader(makeBatch(t, idem(pid, 1, 4, 1)), 0)
	wantKerr(t, err, kerr.OutOfOrderSequenceNumber)
	mustAppend(t, l, makeBatch(t, idem(pid, 1, 0, 1)), 0)
	_, err = l.AppendAsLeader(makeBatch(t, idem(pid, 0, 5, 1)), 0)
	wantKerr(t, err, kerr.InvalidProducerEpoch)

	// A producer the partition has not seen may continue its sequence
	// (KIP-360) once the partition holds records.
	mustAppend(t, l, makeBatch(t, idem(99, 0, 42, 1)), 0)

	// State survives a clean restart...
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, testConfig())
	dup, err = l.AppendAsLeader(makeBatch(t, idem(pid, 1, 0, 1)), 0)
	if err != nil || !dup.Duplicate || dup.BaseOffset != 5 {
		t.Fatalf("duplicate after restart: %+v, %v", dup, err)
	}
	mustAppend(t, l, makeBatch(t, idem(pid, 1, 1, 1)), 0)

	// ...and a crash.
	crash(l)
	l = openLog(t, dir, testConfig())
	defer l.Close()
	dup, err = l.AppendAsLeader(makeBatch(t, idem(pid, 1, 1, 1)), 0)
	if err != nil || !dup.Duplicate || dup.BaseOffset != 7 {
		t.Fatalf("duplicate after crash: %+v, %v", dup, err)
	}
	_, err = l.AppendAsLeader(makeBatch(t, idem(pid, 1, 5, 1)), 0)
	wantKerr(t, err, kerr.OutOfOrderSequenceNumber)
}

func TestIdempotentFreshPartition(t *testing.T) {
	l, _ := newLog(t, testConfig())
	_, err := l.AppendAsLeader(makeBatch(t, idem(1, 0, 5, 1)), 0)
	wantKerr(t, err, kerr.OutOfOrderSequenceNumber)
	mustAppend(t, l, makeBatch(t, idem(1, 0, 0, 1)), 0)
}

func TestIdempotentOnlyLastFiveBatches(t *testing.T) {
	l, _ := newLog(t, testConfig())
	for i := range 7 {
		mustAppend(t, l, makeBatch(t, idem(1, 0, int32(i), 1)), 0)
	}
	res, err := l.AppendAsLeader(makeBatch(t, idem(1, 0, 2, 1)), 0)
	if err != nil || !res.Duplicate || res.BaseOffset != 2 {
		t.Fatalf("fifth newest: %+v, %v", res, err)
	}
	_, err = l.AppendAsLeader(makeBatch(t, idem(1, 0, 1, 1)), 0)
	wantKerr(t, err, kerr.OutOfOrderSequenceNumber)
}

func TestOffsetForTimestamp(t *testing.T) {
	l, _ := newLog(t, testConfig())
	// Offsets 0-4 have timestamps 100-104 (leader epoch 0), 5-9 (gzip)
	// 200-204 (epoch 2), 10-14 300-304 (epoch 5).
	mustAppend(t, l, makeBatch(t, plain(5, 100)), 0)
	gz := plain(5, 200)
	gz.gzip = true
	mustAppend(t, l, makeBatch(t, gz), 2)
	mustAppend(t, l, makeBatch(t, plain(5, 300)), 5)
	for _, tc := range []struct {
		ts, off, rts int64
		epoch        int32
		ok           bool
	}{
		{0, 0, 100, 0, true},
		{102, 2, 102, 0, true},
		{150, 5, 200, 2, true},
		{203, 8, 203, 2, true},
		{301, 11, 301, 5, true},
		{304, 14, 304, 5, true},
		{305, -1, -1, -1, false},
	} {
		off, rts, epoch, ok := l.OffsetForTimestamp(tc.ts)
		if off != tc.off || rts != tc.rts || epoch != tc.epoch || ok != tc.ok {
			t.Errorf("OffsetForTimestamp(%d) = (%d, %d, epoch %d, %v), want (%d, %d, epoch %d, %v)", tc.ts, off, rts, epoch, ok, tc.off, tc.rts, tc.epoch, tc.ok)
		}
	}
	if off, ts := l.MaxTimestamp(); off != 14 || ts != 304 {
		t.Fatalf("MaxTimestamp = (%d, %d)", off, ts)
	}
}

func TestMaxTimestampInsideBatch(t *testing.T) {
	l, _ := newLog(t, testConfig())
	if off, ts := l.MaxTimestamp(); off != -1 || ts != -1 {
		t.Fatalf("empty log: (%d, %d)", off, ts)
	}
	mustAppend(t, l, makeBatch(t, plain(3, 900)), 0)
	mustAppend(t, l, makeBatch(t, plain(3, 100)), 0)
	if off, ts := l.MaxTimestamp(); off != 2 || ts != 902 {
		t.Fatalf("MaxTimestamp = (%d, %d), want (2, 902)", off, ts)
	}
}

func TestOffsetForTimestampAcrossSegments(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 600
	l, _ := newLog(t, cfg)
	for i := range 40 {
		mustAppend(t, l, makeBatch(t, plain(2, int64(1000+10*i))), 0)
	}
	for i := range 40 {
		off, ts, _, ok := l.OffsetForTimestamp(int64(1000 + 10*i + 1))
		if !ok || off != int64(2*i+1) || ts != int64(1000+10*i+1) {
			t.Fatalf("batch %d: (%d, %d, %v)", i, off, ts, ok)
		}
	}
}

func TestRetentionByTime(t *testing.T) {
	clock := newClock()
	cfg := testConfig()
	cfg.SegmentBytes = 500
	cfg.RetentionMs = 10_000
	cfg.Now = clock.Now
	l, dir := newLog(t, cfg)
	old := clock.now.UnixMilli() - 60_000
	for i := range 10 {
		mustAppend(t, l, makeBatch(t, plain(2, old+int64(i))), 0)
	}
	oldEnd := l.LogEndOffset()
	for i := range 10 {
		mustAppend(t, l, makeBatch(t, plain(2, clock.now.UnixMilli()+int64(i))), 0)
	}
	before := len(segmentFiles(t, dir))
	n, err := l.EnforceRetention()
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 || len(segmentFiles(t, dir)) != before-n {
		t.Fatalf("deleted %d of %d segments", n, before)
	}
	ls := l.LogStartOffset()
	if ls > oldEnd || ls == 0 {
		t.Fatalf("log start %d, old data ended at %d", ls, oldEnd)
	}
	_, err = l.Read(0, 1<<20, l.LogEndOffset(), true)
	wantKerr(t, err, kerr.OffsetOutOfRange)
	readAll(t, l, ls)

	// Everything is old now, but the active segment stays.
	clock.advance(time.Hour)
	if _, err := l.EnforceRetention(); err != nil {
		t.Fatal(err)
	}
	if bases := segmentFiles(t, dir); len(bases) != 1 {
		t.Fatalf("segments %v, want only the active one", bases)
	}
}

func TestRetentionBySize(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 500
	cfg.RetentionBytes = 1000
	l, _ := newLog(t, cfg)
	now := time.Now().UnixMilli()
	for i := range 30 {
		mustAppend(t, l, makeBatch(t, plain(2, now+int64(i))), 0)
	}
	if _, err := l.EnforceRetention(); err != nil {
		t.Fatal(err)
	}
	// Kafka deletes whole segments only while at least retention.bytes remain.
	if size := l.Size(); size < 1000 || size >= 1000+500 {
		t.Fatalf("size %d after retention.bytes 1000", size)
	}
	readAll(t, l, l.LogStartOffset())
}

func TestDeleteRecordsBefore(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 500
	l, dir := newLog(t, cfg)
	for i := range 20 {
		mustAppend(t, l, makeBatch(t, plain(2, int64(i))), 0)
	}
	_, err := l.DeleteRecordsBefore(10)
	wantKerr(t, err, kerr.OffsetOutOfRange) // above the high watermark
	l.SetHighWatermark(30)
	ls, err := l.DeleteRecordsBefore(25)
	if err != nil || ls != 25 || l.LogStartOffset() != 25 {
		t.Fatalf("log start %d, %v", ls, err)
	}
	for _, base := range segmentFiles(t, dir) {
		if base > 25 {
			continue
		}
		// Only the segment holding 25 may remain below it.
		if next := nextBase(segmentFiles(t, dir), base); next >= 0 && next <= 25 {
			t.Fatalf("segment %d wholly below the log start remains", base)
		}
	}
	_, err = l.Read(24, 1<<20, 40, true)
	wantKerr(t, err, kerr.OffsetOutOfRange)
	r, err := l.Read(25, 1<<20, 40, true)
	if err != nil || r.Len == 0 {
		t.Fatalf("read at log start: %v", err)
	}
	r.Release()
	if ls, _ := l.DeleteRecordsBefore(3); ls != 25 {
		t.Fatalf("moving log start back: %d", ls)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, cfg)
	defer l.Close()
	if l.LogStartOffset() != 25 || l.HighWatermark() != 30 {
		t.Fatalf("after restart log start %d, hw %d", l.LogStartOffset(), l.HighWatermark())
	}
}

func nextBase(bases []int64, base int64) int64 {
	for _, b := range bases {
		if b > base {
			return b
		}
	}
	return -1
}

func TestHighWatermarkClamps(t *testing.T) {
	l, _ := newLog(t, testConfig())
	mustAppend(t, l, makeBatch(t, plain(4, 0)), 0)
	l.SetHighWatermark(100)
	if l.HighWatermark() != 4 {
		t.Fatalf("hw %d, want LEO 4", l.HighWatermark())
	}
	l.SetHighWatermark(-5)
	if l.HighWatermark() != 0 {
		t.Fatalf("hw %d, want 0", l.HighWatermark())
	}
}

func TestTruncateToAndEpochs(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 500
	l, dir := newLog(t, cfg)
	var batches [][]byte
	for i := range 20 {
		b := makeBatch(t, idem(1, 0, int32(2*i), 2))
		mustAppend(t, l, b, int32(i/5)) // epochs 0..3 start at 0, 10, 20, 30
		batches = append(batches, b)
	}
	if e, off := l.EndOffsetForEpoch(1); e != 1 || off != 20 {
		t.Fatalf("end of epoch 1: (%d, %d)", e, off)
	}
	if e, off := l.EndOffsetForEpoch(3); e != 3 || off != 40 {
		t.Fatalf("end of latest epoch: (%d, %d)", e, off)
	}
	if e, off := l.EndOffsetForEpoch(-1); e != -1 || off != -1 {
		t.Fatalf("undefined epoch: (%d, %d)", e, off)
	}

	// 23 is inside the batch 22-23: the whole batch goes.
	if err := l.TruncateTo(23); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 22 || l.LatestEpoch() != 2 {
		t.Fatalf("LEO %d, latest epoch %d", l.LogEndOffset(), l.LatestEpoch())
	}
	if !bytes.Equal(readAll(t, l, 0), bytes.Join(batches[:11], nil)) {
		t.Fatal("kept records differ")
	}
	for _, base := range segmentFiles(t, dir) {
		if base >= 22 {
			t.Fatalf("segment %d survived truncation", base)
		}
	}
	// Producer state went back with the log: sequence 22 follows 21 again.
	mustAppend(t, l, makeBatch(t, idem(1, 0, 22, 2)), 4)
	if e, off := l.EndOffsetForEpoch(2); e != 2 || off != 22 {
		t.Fatalf("end of epoch 2 after truncation: (%d, %d)", e, off)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dir, leaderEpochFile)); got != "0\n4\n0 0\n1 10\n2 20\n4 22\n" {
		t.Fatalf("leader-epoch-checkpoint:\n%s", got)
	}
	l = openLog(t, dir, cfg)
	defer l.Close()
	if l.LogEndOffset() != 24 || l.LatestEpoch() != 4 {
		t.Fatalf("after restart LEO %d, epoch %d", l.LogEndOffset(), l.LatestEpoch())
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTruncateKeepsHeldRegionsReadable(t *testing.T) {
	l, _ := newLog(t, testConfig())
	for i := range 5 {
		mustAppend(t, l, makeBatch(t, plain(2, int64(i))), 0)
	}
	r, err := l.Read(0, 1<<20, 10, true)
	if err != nil {
		t.Fatal(err)
	}
	before := regionBytes(t, r)
	if err := l.TruncateTo(4); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, makeBatch(t, plain(2, 99)), 0)
	if got := regionBytes(t, r); !bytes.Equal(got, before) {
		t.Fatal("a held region changed under truncation")
	}
	r.Release()
	if got := headers(t, readAll(t, l, 0)); len(got) != 3 || got[2].FirstTimestamp != 99 {
		t.Fatalf("log after truncate and append: %+v", got)
	}
}

func TestTruncateFullyAndStartAt(t *testing.T) {
	l, dir := newLog(t, testConfig())
	mustAppend(t, l, makeBatch(t, idem(1, 0, 0, 3)), 2)
	if err := l.TruncateFullyAndStartAt(100); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 100 || l.LogEndOffset() != 100 || l.LatestEpoch() != -1 {
		t.Fatalf("start %d end %d epoch %d", l.LogStartOffset(), l.LogEndOffset(), l.LatestEpoch())
	}
	if bases := segmentFiles(t, dir); len(bases) != 1 || bases[0] != 100 {
		t.Fatalf("segments %v", bases)
	}
	res := mustAppend(t, l, makeBatch(t, idem(1, 0, 0, 1)), 3)
	if res.BaseOffset != 100 || res.Duplicate {
		t.Fatalf("append after restart: %+v", res)
	}
}

func TestAppendAsFollower(t *testing.T) {
	leader, _ := newLog(t, testConfig())
	follower, _ := newLog(t, testConfig())
	for i := range 6 {
		mustAppend(t, leader, makeBatch(t, idem(5, 0, int32(3*i), 3)), int32(1+i/3))
	}
	all := readAll(t, leader, 0)
	hdrs := headers(t, all)
	half := hdrs[0].Size() + hdrs[1].Size() + hdrs[2].Size()
	if _, err := follower.AppendAsFollower(all[:half]); err != nil {
		t.Fatal(err)
	}
	// Overlapping fetch: batches below the LEO are skipped.
	res, err := follower.AppendAsFollower(all)
	if err != nil {
		t.Fatal(err)
	}
	if res.BaseOffset != 9 || res.LastOffset != 17 {
		t.Fatalf("follower result %+v", res)
	}
	if !bytes.Equal(readAll(t, follower, 0), all) {
		t.Fatal("follower log differs from leader")
	}
	if e, off := follower.EndOffsetForEpoch(1); e != 1 || off != 9 {
		t.Fatalf("follower epoch 1 ends (%d, %d)", e, off)
	}
	// A batch straddling the LEO is refused.
	overlap := makeBatch(t, plain(3, 0))
	batch.SetBaseOffset(overlap, 17)
	_, err = follower.AppendAsFollower(overlap)
	wantKerr(t, err, kerr.OffsetOutOfRange)
	// Producer state came along: the follower, now leader, detects duplicates.
	dup, err := follower.AppendAsLeader(makeBatch(t, idem(5, 0, 15, 3)), 3)
	if err != nil || !dup.Duplicate || dup.BaseOffset != 15 {
		t.Fatalf("duplicate on new leader: %+v, %v", dup, err)
	}
	// A gap, where a compacted leader removed whole batches, is taken.
	gap := makeBatch(t, plain(1, 0))
	batch.SetBaseOffset(gap, 50)
	if res, err := follower.AppendAsFollower(gap); err != nil || res.BaseOffset != 50 || follower.LogEndOffset() != 51 {
		t.Fatalf("append after a gap: %+v, %v, LEO %d", res, err, follower.LogEndOffset())
	}
}

func TestCheckpointFiles(t *testing.T) {
	l, dir := newLog(t, testConfig())
	mustAppend(t, l, makeBatch(t, plain(3, 0)), 0)
	l.SetHighWatermark(2)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		recoveryPointFile: "0\n1\ntopic 0 3\n",
		highWatermarkFile: "0\n1\ntopic 0 2\n",
	} {
		if got := readFile(t, filepath.Join(dir, name)); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	// The log start is still 0, which is what a missing file means.
	if _, err := os.Stat(filepath.Join(dir, logStartFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("log start 0 was written: %v", err)
	}
	if _, err := l.DeleteRecordsBefore(1); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, filepath.Join(dir, logStartFile)), "0\n1\ntopic 0 1\n"; got != want {
		t.Errorf("%s = %q, want %q", logStartFile, got, want)
	}
}

// TestNewLogWritesNoCheckpoints: a partition nothing was written to
// writes no offset checkpoint, however often the broker's periodic pass
// asks it to flush (before, each of 10,000 new partitions wrote three
// files with six fsyncs in its first pass), and one whose values then move
// writes them; a crash either way reopens at the same offsets.
func TestNewLogWritesNoCheckpoints(t *testing.T) {
	cfg := testConfig()
	clock := newClock()
	cfg.Now = clock.Now
	l, dir := newLog(t, cfg)
	offsetFiles := []string{recoveryPointFile, logStartFile, highWatermarkFile}
	for range 3 {
		clock.advance(time.Duration(cfg.CheckpointIntervalMs) * time.Millisecond)
		if err := l.MaybeFlush(); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range offsetFiles {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("an idle new log wrote %s: %v", name, err)
		}
	}
	crash(l)
	l = openLog(t, dir, cfg)
	if l.LogEndOffset() != 0 || l.HighWatermark() != 0 || l.LogStartOffset() != 0 {
		t.Fatalf("after a crash: LEO %d, HW %d, log start %d", l.LogEndOffset(), l.HighWatermark(), l.LogStartOffset())
	}
	mustAppend(t, l, makeBatch(t, plain(4, 0)), 0)
	l.SetHighWatermark(4)
	clock.advance(time.Duration(cfg.CheckpointIntervalMs) * time.Millisecond)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{recoveryPointFile: "0\n1\ntopic 0 4\n", highWatermarkFile: "0\n1\ntopic 0 4\n"} {
		if got := readFile(t, filepath.Join(dir, name)); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	crash(l)
	l = openLog(t, dir, cfg)
	defer l.Close()
	if l.LogEndOffset() != 4 || l.HighWatermark() != 4 || l.LogStartOffset() != 0 {
		t.Fatalf("after the second crash: LEO %d, HW %d, log start %d", l.LogEndOffset(), l.HighWatermark(), l.LogStartOffset())
	}
}

func TestFlushMessages(t *testing.T) {
	cfg := testConfig()
	cfg.FlushIntervalMessages = 2
	l, dir := newLog(t, cfg)
	if res := mustAppend(t, l, makeBatch(t, plain(1, 0)), 0); res.Sync {
		t.Fatal("one message of flush.messages=2 asks for a sync")
	}
	res := mustAppend(t, l, makeBatch(t, plain(1, 0)), 0)
	if !res.Sync {
		t.Fatal("the second message of flush.messages=2 asks for no sync")
	}
	if err := l.Sync(res.LastOffset + 1); err != nil {
		t.Fatal(err)
	}
	if !l.isSynced(2) {
		t.Fatal("Sync(2) left offset 1 unsynced")
	}
	// The acknowledgement's sync writes no checkpoint; the periodic flush
	// then moves the recovery point up to what was synced.
	if _, err := os.Stat(filepath.Join(dir, recoveryPointFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Sync wrote the recovery point: %v", err)
	}
	if err := l.MaybeFlush(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dir, recoveryPointFile)); got != "0\n1\ntopic 0 2\n" {
		t.Fatalf("recovery point after a sync and MaybeFlush: %q", got)
	}
}

// TestSyncSurvivesCrash: records synced but never flushed (no recovery
// point, no index sync) are all there after a crash.
func TestSyncSurvivesCrash(t *testing.T) {
	cfg := testConfig()
	cfg.FlushIntervalMessages = 1
	l, dir := newLog(t, cfg)
	var last int64
	for range 50 {
		res := mustAppend(t, l, makeBatch(t, plain(10, 100)), 0)
		if err := l.Sync(res.LastOffset + 1); err != nil {
			t.Fatal(err)
		}
		last = res.LastOffset
	}
	crash(l)
	l2 := openLog(t, dir, cfg)
	defer l2.Close()
	if l2.LogEndOffset() != last+1 {
		t.Fatalf("LEO %d after the crash, synced up to %d", l2.LogEndOffset(), last)
	}
}

// TestSyncGroupCommit: appenders that sync concurrently share syncs, and
// a truncation makes a sync begun before it vouch for nothing after.
func TestSyncGroupCommit(t *testing.T) {
	cfg := testConfig()
	cfg.FlushIntervalMessages = 1
	l, _ := newLog(t, cfg)
	const writers, each = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				res, err := l.AppendAsLeader(makeBatch(t, plain(1, 100)), 0)
				if err == nil && res.Sync {
					err = l.Sync(res.LastOffset + 1)
				}
				if err != nil {
					errs <- err
					return
				}
				if !l.isSynced(res.LastOffset + 1) {
					errs <- fmt.Errorf("offset %d acknowledged unsynced", res.LastOffset)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	n := l.syncs.Load()
	t.Logf("%d appends, %d syncs", writers*each, n)
	if n >= writers*each {
		t.Fatalf("%d syncs for %d concurrent appends: no sync was shared", n, writers*each)
	}
	if err := l.TruncateTo(10); err != nil {
		t.Fatal(err)
	}
	if l.isSynced(11) {
		t.Fatal("synced beyond the LEO after a truncation")
	}
}

func TestMaybeFlush(t *testing.T) {
	clock := newClock()
	cfg := testConfig()
	cfg.FlushIntervalMs = 1000
	cfg.Now = clock.Now
	l, dir := newLog(t, cfg)
	mustAppend(t, l, makeBatch(t, plain(1, 0)), 0)
	if err := l.MaybeFlush(); err != nil {
		t.Fatal(err)
	}
	if rp, _, err := readOffsetCheckpoint(filepath.Join(dir, recoveryPointFile)); err != nil || rp != 0 {
		t.Fatalf("flushed before flush.ms: recovery point %d, %v", rp, err)
	}
	clock.advance(2 * time.Second)
	if err := l.MaybeFlush(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dir, recoveryPointFile)); got != "0\n1\ntopic 0 1\n" {
		t.Fatalf("recovery point after flush.ms: %q", got)
	}
}

func TestClosedLog(t *testing.T) {
	l, dir := newLog(t, testConfig())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsLeader(makeBatch(t, plain(1, 0)), 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
	if _, err := l.Read(0, 1, 0, true); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after close: %v", err)
	}
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("directory survives Delete: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := DefaultConfig()
	bad.TimestampType = "Sometime"
	if err := bad.Validate(); err == nil {
		t.Fatal("bad timestamp type accepted")
	}
	if _, err := Open(t.TempDir(), Config{}, nil); err == nil {
		t.Fatal("zero config accepted")
	}
}

// TestReadMatchesNaive compares Read with a direct computation over the
// appended batches for many offsets and limits, with a dense index.
func TestReadMatchesNaive(t *testing.T) {
	cfg := testConfig()
	cfg.IndexIntervalBytes = 100
	cfg.SegmentBytes = 4000
	l, _ := newLog(t, cfg)
	type batch struct{ base, last, pos, size int64 }
	var bs []batch
	var pos int64
	for i := range 120 {
		b := makeBatch(t, batchSpec{n: 1 + i%3, ts: int64(i), pid: -1, epoch: -1, seq: -1, valueSz: 10 + 7*(i%5)})
		res := mustAppend(t, l, b, 0)
		if len(bs) > 0 && res.BaseOffset > 0 && l.segmentFor(res.BaseOffset) != l.segmentFor(bs[len(bs)-1].base) {
			pos = 0
		}
		bs = append(bs, batch{res.BaseOffset, res.LastOffset, pos, int64(len(b))})
		pos += int64(len(b))
	}
	leo := l.LogEndOffset()
	for off := int64(0); off < leo; off += 3 {
		for _, maxBytes := range []int32{0, 90, 400, 1000, 5000} {
			for _, maxOffset := range []int64{off, off + 1, off + 5, off + 40, leo} {
				for _, minOne := range []bool{false, true} {
					r, err := l.Read(off, maxBytes, maxOffset, minOne)
					if err != nil {
						t.Fatal(err)
					}
					// Naive: from the batch holding off, within its segment.
					var wantPos, wantLen int64
					i := 0
					for bs[i].last < off {
						i++
					}
					wantPos = bs[i].pos
					for j := i; j < len(bs) && bs[j].base < maxOffset; j++ {
						if j > i && bs[j].pos == 0 {
							break
						}
						if wantLen+bs[j].size > int64(maxBytes) && !(minOne && j == i) {
							break
						}
						wantLen += bs[j].size
					}
					if off >= maxOffset {
						wantLen = 0
					}
					if r.Len != wantLen || (wantLen > 0 && r.Pos != wantPos) {
						t.Fatalf("Read(%d, %d, %d, %v) = [%d +%d], want [%d +%d]", off, maxBytes, maxOffset, minOne, r.Pos, r.Len, wantPos, wantLen)
					}
					r.Release()
				}
			}
		}
	}
}

func TestRegionSurvivesRetention(t *testing.T) {
	clock := newClock()
	cfg := testConfig()
	cfg.SegmentBytes = 500
	cfg.RetentionMs = 1000
	cfg.Now = clock.Now
	l, dir := newLog(t, cfg)
	for i := range 20 {
		mustAppend(t, l, makeBatch(t, plain(2, clock.now.UnixMilli()+int64(i))), 0)
	}
	r, err := l.Read(0, 1<<20, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	before := regionBytes(t, r)
	clock.advance(time.Hour)
	if n, err := l.EnforceRetention(); err != nil || n == 0 {
		t.Fatalf("retention deleted %d: %v", n, err)
	}
	if _, err := os.Stat(segmentPath(dir, 0, logExt)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("segment 0 still on disk: %v", err)
	}
	if got := regionBytes(t, r); !bytes.Equal(got, before) {
		t.Fatal("held region changed after its segment was deleted")
	}
	r.Release()
	r.Release()
}

func TestMaybeFlushAfterRoll(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 500
	l, dir := newLog(t, cfg)
	for i := range 10 {
		mustAppend(t, l, makeBatch(t, plain(2, int64(i))), 0)
	}
	if err := l.MaybeFlush(); err != nil {
		t.Fatal(err)
	}
	// flush.ms is off, but a rolled segment is flushed as Kafka does.
	want := encodeOffsetCheckpoint(dir, l.LogEndOffset())
	if got := readFile(t, filepath.Join(dir, recoveryPointFile)); got != string(want) {
		t.Fatalf("recovery point %q, want %q", got, want)
	}
}

func TestSetConfig(t *testing.T) {
	l, dir := newLog(t, testConfig())
	mustAppend(t, l, makeBatch(t, plain(2, 0)), 0)
	cfg := testConfig()
	cfg.SegmentBytes = 100
	l.SetConfig(cfg)
	mustAppend(t, l, makeBatch(t, plain(2, 0)), 0)
	if n := len(segmentFiles(t, dir)); n != 2 {
		t.Fatalf("%d segments after lowering segment.bytes", n)
	}
	bad := cfg
	bad.SegmentBytes = -1
	l.SetConfig(bad)
	if l.config().SegmentBytes != 100 {
		t.Fatal("invalid config applied")
	}
}

// TestConcurrentUse runs appends, reads, flushes, retention and timestamp
// lookups together; run with -race.
func TestConcurrentUse(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 2000
	cfg.RetentionBytes = 10_000
	l, _ := newLog(t, cfg)
	stop := make(chan struct{})
	errc := make(chan error, 4)
	worker := func(f func() error) {
		go func() {
			for {
				select {
				case <-stop:
					errc <- nil
					return
				default:
				}
				if err := f(); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	worker(func() error {
		ls, leo := l.LogStartOffset(), l.LogEndOffset()
		if leo == ls {
			return nil
		}
		r, err := l.Read(ls+(leo-ls)/2, 3000, leo, true)
		if errors.Is(err, kerr.OffsetOutOfRange) {
			return nil // retention moved the start
		}
		if err == nil && r.Len > 0 {
			b := make([]byte, r.Len)
			if _, err = r.File.ReadAt(b, r.Pos); err == nil {
				_, err = batch.ValidateLog(b)
			}
		}
		r.Release()
		return err
	})
	worker(func() error { _, err := l.EnforceRetention(); return err })
	worker(func() error { l.OffsetForTimestamp(50); l.MaxTimestamp(); return l.MaybeFlush() })
	now := time.Now().UnixMilli()
	for i := range 300 {
		mustAppend(t, l, makeBatch(t, plain(1+i%3, now+int64(i))), 0)
	}
	close(stop)
	for range 3 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}

func TestEpochCheckpointFailureDoesNotFailAppend(t *testing.T) {
	l, dir := newLog(t, testConfig())
	mustAppend(t, l, makeBatch(t, plain(1, 0)), 1)
	// A directory where the temporary checkpoint goes makes the write fail.
	tmp := filepath.Join(dir, leaderEpochFile+tmpSuffix)
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	res := mustAppend(t, l, makeBatch(t, plain(1, 0)), 2)
	if res.BaseOffset != 1 || l.LatestEpoch() != 2 {
		t.Fatalf("append %+v, epoch %d", res, l.LatestEpoch())
	}
	if err := os.Remove(tmp); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dir, leaderEpochFile)); got != "0\n2\n1 0\n2 1\n" {
		t.Fatalf("epoch checkpoint after flush: %q", got)
	}
}

// TestCheckpointInterval: between flushes a moved high watermark is written
// at most every replica.high.watermark.checkpoint.interval.ms, counted from
// the log's open: a new partition's first moves are not written at once
// (64 new partitions each rewrote theirs, with two fsyncs, in the first
// second of the A/B bench's produce).
func TestCheckpointInterval(t *testing.T) {
	clock := newClock()
	cfg := testConfig()
	cfg.Now = clock.Now
	cfg.CheckpointIntervalMs = 5000
	l, dir := newLog(t, cfg)
	hw := func() int64 {
		t.Helper()
		v, _, err := readOffsetCheckpoint(filepath.Join(dir, highWatermarkFile))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for i := int64(1); i <= 3; i++ {
		mustAppend(t, l, makeBatch(t, plain(1, 0)), 0)
		l.SetHighWatermark(i)
		if err := l.MaybeFlush(); err != nil {
			t.Fatal(err)
		}
		clock.advance(time.Second)
	}
	if _, err := os.Stat(filepath.Join(dir, highWatermarkFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("high watermark checkpoint written within 3 s of the open (%v), before the interval", err)
	}
	clock.advance(3 * time.Second)
	if err := l.MaybeFlush(); err != nil {
		t.Fatal(err)
	}
	if got := hw(); got != 3 {
		t.Fatalf("high watermark checkpoint %d once the interval passed, want 3", got)
	}
}
