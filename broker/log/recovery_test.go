package log

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/ktoolhq/ktool/internal/batch"
)

// fill appends n batches of two records and returns them as written.
func fill(t testing.TB, l *Log, n int) [][]byte {
	t.Helper()
	var out [][]byte
	for i := range n {
		spec := idem(1, 0, int32(2*i), 2)
		spec.ts = int64(1000 + 10*i)
		b := makeBatch(t, spec)
		mustAppend(t, l, b, 1)
		out = append(out, b)
	}
	return out
}

func smallSegments() Config {
	cfg := testConfig()
	cfg.SegmentBytes = 1000
	return cfg
}

func TestRecoverTornTail(t *testing.T) {
	cfg := smallSegments()
	l, dir := newLog(t, cfg)
	batches := fill(t, l, 30)
	bases := segmentFiles(t, dir)
	active := segmentPath(dir, bases[len(bases)-1], logExt)
	crash(l)

	// The last batch was only partly written.
	if err := os.Truncate(active, fileSize(t, active)-7); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, cfg)
	defer l.Close()
	if l.LogEndOffset() != 58 {
		t.Fatalf("LEO %d after torn tail, want 58", l.LogEndOffset())
	}
	if !bytes.Equal(readAll(t, l, 0), bytes.Join(batches[:29], nil)) {
		t.Fatal("records before the damage differ")
	}
	// Producer state was rebuilt to the recovered end: sequence 58 is next.
	mustAppend(t, l, makeBatch(t, idem(1, 0, 58, 2)), 1)
}

func TestRecoverCorruptByte(t *testing.T) {
	cfg := smallSegments()
	l, dir := newLog(t, cfg)
	batches := fill(t, l, 30)
	if len(segmentFiles(t, dir)) < 3 {
		t.Fatal("want several segments")
	}
	crash(l)

	// Flip a record byte of the fifth batch (offsets 8-9) in the first segment.
	pos := int64(0)
	for _, b := range batches[:4] {
		pos += int64(len(b))
	}
	first := segmentPath(dir, 0, logExt)
	flipByte(t, first, pos+batch.HeaderSize+3)

	l = openLog(t, dir, cfg)
	defer l.Close()
	if l.LogEndOffset() != 8 {
		t.Fatalf("LEO %d after corruption, want 8", l.LogEndOffset())
	}
	if bases := segmentFiles(t, dir); len(bases) != 1 {
		t.Fatalf("segments after the damage survive: %v", bases)
	}
	if !bytes.Equal(readAll(t, l, 0), bytes.Join(batches[:4], nil)) {
		t.Fatal("records before the damage differ")
	}
	res := mustAppend(t, l, makeBatch(t, idem(1, 0, 8, 2)), 1)
	if res.BaseOffset != 8 {
		t.Fatalf("append after recovery at %d", res.BaseOffset)
	}
}

func flipByte(t testing.TB, path string, at int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}

func TestRecoverFromRecoveryPointOnly(t *testing.T) {
	cfg := smallSegments()
	l, dir := newLog(t, cfg)
	batches := fill(t, l, 10)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	more := makeBatch(t, idem(1, 0, 20, 2))
	mustAppend(t, l, more, 1)
	batches = append(batches, more)
	crash(l)

	// A corrupt tail past the recovery point is cut.
	bases := segmentFiles(t, dir)
	active := segmentPath(dir, bases[len(bases)-1], logExt)
	flipByte(t, active, fileSize(t, active)-1)
	l = openLog(t, dir, cfg)
	defer l.Close()
	if l.LogEndOffset() != 20 {
		t.Fatalf("LEO %d, want 20", l.LogEndOffset())
	}
	if !bytes.Equal(readAll(t, l, 0), bytes.Join(batches[:10], nil)) {
		t.Fatal("flushed records differ")
	}
}

func TestRecoverDamagedIndexes(t *testing.T) {
	cfg := smallSegments()
	l, dir := newLog(t, cfg)
	batches := fill(t, l, 40)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	bases := segmentFiles(t, dir)
	if len(bases) < 4 {
		t.Fatalf("segments %v, want at least 4", bases)
	}
	wantIdx := make(map[int64][]byte)
	for _, b := range bases {
		wantIdx[b] = []byte(readFile(t, segmentPath(dir, b, indexExt)))
	}
	// Missing, torn, garbled and emptied index files, after a clean shutdown.
	if err := os.Remove(segmentPath(dir, bases[0], indexExt)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(segmentPath(dir, bases[0], timeIndexExt)); err != nil {
		t.Fatal(err)
	}
	idx1 := segmentPath(dir, bases[1], indexExt)
	if err := os.Truncate(idx1, fileSize(t, idx1)-3); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(segmentPath(dir, bases[2], indexExt), bytes.Repeat([]byte{0xff}, 16), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(segmentPath(dir, bases[3], timeIndexExt), 0); err != nil {
		t.Fatal(err)
	}

	l = openLog(t, dir, cfg)
	defer l.Close()
	if !bytes.Equal(readAll(t, l, 0), bytes.Join(batches, nil)) {
		t.Fatal("records differ after index repair")
	}
	for _, b := range bases {
		if got := readFile(t, segmentPath(dir, b, indexExt)); got != string(wantIdx[b]) {
			t.Errorf("segment %d: rebuilt offset index differs", b)
		}
	}
	for i := range 40 {
		off, ts, _, ok := l.OffsetForTimestamp(int64(1000 + 10*i + 1))
		if !ok || off != int64(2*i+1) || ts != int64(1000+10*i+1) {
			t.Fatalf("timestamp lookup %d after repair: (%d, %d, %v)", i, off, ts, ok)
		}
	}
}

func TestRecoverCleanShutdownWithDamagedTail(t *testing.T) {
	cfg := testConfig()
	l, dir := newLog(t, cfg)
	batches := fill(t, l, 5)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Even with the clean marker, a last batch running past the end is found.
	seg := segmentPath(dir, 0, logExt)
	if err := os.Truncate(seg, fileSize(t, seg)-1); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, cfg)
	defer l.Close()
	if l.LogEndOffset() != 8 || !bytes.Equal(readAll(t, l, 0), bytes.Join(batches[:4], nil)) {
		t.Fatalf("LEO %d after damaged clean tail", l.LogEndOffset())
	}
}

func TestRecoverEverySizeOfTornWrite(t *testing.T) {
	cfg := testConfig()
	src, srcDir := newLog(t, cfg)
	batches := fill(t, src, 3)
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	full := []byte(readFile(t, segmentPath(srcDir, 0, logExt)))
	prefix := int64(len(batches[0]) + len(batches[1]))
	for cut := prefix; cut <= int64(len(full)); cut += 5 {
		dir := filepath.Join(t.TempDir(), "topic-0")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(segmentPath(dir, 0, logExt), full[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		l := openLog(t, dir, cfg)
		want := int64(4)
		if cut == int64(len(full)) {
			want = 6
		}
		if l.LogEndOffset() != want {
			t.Fatalf("cut at %d: LEO %d, want %d", cut, l.LogEndOffset(), want)
		}
		readAll(t, l, 0)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRecoverDropsOverlappingSegment(t *testing.T) {
	cfg := smallSegments()
	l, dir := newLog(t, cfg)
	batches := fill(t, l, 30)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	bases := segmentFiles(t, dir)
	// Rename the third segment one offset lower: it overlaps the second.
	for _, ext := range []string{logExt, indexExt, timeIndexExt} {
		if err := os.Rename(segmentPath(dir, bases[2], ext), segmentPath(dir, bases[2]-1, ext)); err != nil {
			t.Fatal(err)
		}
	}
	l = openLog(t, dir, cfg)
	defer l.Close()
	if l.LogEndOffset() != bases[2] {
		t.Fatalf("LEO %d, want %d", l.LogEndOffset(), bases[2])
	}
	n := int(bases[2] / 2)
	if !bytes.Equal(readAll(t, l, 0), bytes.Join(batches[:n], nil)) {
		t.Fatal("records of the first two segments differ")
	}
}

func TestRecoverKeepsSegmentAfterGap(t *testing.T) {
	cfg := smallSegments()
	l, dir := newLog(t, cfg)
	batches := fill(t, l, 30)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	bases := segmentFiles(t, dir)
	// Without the second segment the third starts after a gap, as the
	// cleaner leaves them: both stay, recovered or trusted.
	for _, ext := range []string{logExt, indexExt, timeIndexExt} {
		if err := os.Remove(segmentPath(dir, bases[1], ext)); err != nil {
			t.Fatal(err)
		}
	}
	want := append(bytes.Join(batches[:bases[1]/2], nil), bytes.Join(batches[bases[2]/2:], nil)...)
	for _, clean := range []bool{true, false} {
		if !clean {
			if err := os.Remove(filepath.Join(dir, recoveryPointFile)); err != nil {
				t.Fatal(err)
			}
		}
		l = openLog(t, dir, cfg)
		if l.LogEndOffset() != 60 {
			t.Fatalf("LEO %d, want 60", l.LogEndOffset())
		}
		if !bytes.Equal(readAll(t, l, 0), want) {
			t.Fatal("records differ")
		}
		if clean {
			crash(l)
		} else if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRecoverIgnoresBadSnapshot(t *testing.T) {
	l, dir := newLog(t, testConfig())
	fill(t, l, 4)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	snap := segmentPath(dir, 8, snapshotExt)
	flipByte(t, snap, 20)
	l = openLog(t, dir, testConfig())
	defer l.Close()
	// State came from replaying the log instead.
	res, err := l.AppendAsLeader(makeBatch(t, idem(1, 0, 6, 2)), 1)
	if err != nil || !res.Duplicate || res.BaseOffset != 6 {
		t.Fatalf("duplicate after bad snapshot: %+v, %v", res, err)
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	ps := newProducerState()
	for i := range 7 {
		h := batch.Header{BaseOffset: int64(10 * i), LastOffsetDelta: 1, NumRecords: 2, ProducerID: int64(i % 3), ProducerEpoch: 2, BaseSequence: int32(2 * i), MaxTimestamp: int64(i)}
		ps.apply(h, nil)
	}
	got, off, err := decodeSnapshot(ps.encodeSnapshot(77))
	if err != nil || off != 77 {
		t.Fatalf("decode: %d, %v", off, err)
	}
	if len(got.m) != len(ps.m) {
		t.Fatalf("%d producers, want %d", len(got.m), len(ps.m))
	}
	for pid, e := range ps.m {
		g := got.m[pid]
		if g == nil || g.epoch != e.epoch || len(g.batches) != len(e.batches) {
			t.Fatalf("producer %d: %+v, want %+v", pid, g, e)
		}
		for i := range e.batches {
			if g.batches[i] != e.batches[i] {
				t.Fatalf("producer %d batch %d: %+v, want %+v", pid, i, g.batches[i], e.batches[i])
			}
		}
	}
	b := ps.encodeSnapshot(77)
	b[len(b)-1] ^= 1
	if _, _, err := decodeSnapshot(b); err == nil {
		t.Fatal("corrupt snapshot decoded")
	}
}

func TestRecoverHugeLength(t *testing.T) {
	l, dir := newLog(t, testConfig())
	batches := fill(t, l, 2)
	crash(l)
	// A length field saying 2 GiB must not make recovery allocate it.
	f, err := os.OpenFile(segmentPath(dir, 0, logExt), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte{0, 0, 0, 0, 0, 0, 0, 4, 0x7f, 0xff, 0xff, 0xff, 0, 0}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	l = openLog(t, dir, testConfig())
	runtime.ReadMemStats(&after)
	defer l.Close()
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Fatalf("recovery allocated %d bytes", grew)
	}
	if l.LogEndOffset() != 4 || !bytes.Equal(readAll(t, l, 0), bytes.Join(batches, nil)) {
		t.Fatalf("LEO %d", l.LogEndOffset())
	}
}

// TestRecoveryOfUnchangedLogWritesNothing: after a crash, a log that holds
// exactly what its last flush made durable (an idle partition: empty, or
// written and flushed) is rescanned but no file in its directory is
// written, created or removed (before, every such partition rewrote both
// index files of its active segment, its leader-epoch checkpoint when the
// latest epoch wrote nothing, and flushed: six fsyncs each at the start of
// a broker with 10,000 partitions). A log with records past the
// recovery point is still repaired and flushed. An active segment with less
// than an index interval of data has no index entry and no sealed time
// entry: it was rescanned and rewrote both index files at every start.
func TestRecoveryOfUnchangedLogWritesNothing(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1024
	past := time.Unix(1_000_000_000, 0)
	stamp := func(t *testing.T, dir string) map[string]time.Time {
		t.Helper()
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		out := make(map[string]time.Time)
		for _, e := range entries {
			path := filepath.Join(dir, e.Name())
			if err := os.Chtimes(path, past, past); err != nil {
				t.Fatal(err)
			}
			out[e.Name()] = past
		}
		return out
	}
	unchanged := func(t *testing.T, dir string, want map[string]time.Time) {
		t.Helper()
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != len(want) {
			t.Errorf("%d files after recovery, want the %d before", len(entries), len(want))
		}
		for _, e := range entries {
			info, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			if w, ok := want[e.Name()]; !ok || !info.ModTime().Equal(w) {
				t.Errorf("%s was written by the recovery of an unchanged log", e.Name())
			}
		}
	}
	for _, tc := range []struct {
		name    string
		batches int
	}{{"empty", 0}, {"flushed", 30}, {"one batch, less than an index interval", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			l, dir := newLog(t, cfg)
			want := fill(t, l, tc.batches)
			l.SetHighWatermark(l.LogEndOffset())
			// A new leader's epoch that wrote nothing: its entry is in
			// the file, and every load drops it again.
			l.AssignEpochStart(5, l.LogEndOffset())
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			leo := l.LogEndOffset()
			crash(l)
			before := stamp(t, dir)
			l = openLog(t, dir, cfg)
			unchanged(t, dir, before)
			if l.LogEndOffset() != leo || l.HighWatermark() != leo {
				t.Fatalf("LEO %d, HW %d after recovery, want %d", l.LogEndOffset(), l.HighWatermark(), leo)
			}
			if e, wantEpoch := l.LatestEpoch(), map[bool]int32{false: -1, true: 1}[tc.batches > 0]; e != wantEpoch {
				t.Fatalf("latest epoch %d after recovery, want %d (that of the records)", e, wantEpoch)
			}
			if got := readAll(t, l, 0); !bytes.Equal(got, bytes.Join(want, nil)) {
				t.Fatalf("read back %d bytes, want %d", len(got), len(bytes.Join(want, nil)))
			}
			// Appends after such a recovery are recovered by the next one.
			var more [][]byte
			for range 3 {
				b := makeBatch(t, plain(2, 5000))
				mustAppend(t, l, b, 1)
				more = append(more, b)
			}
			crash(l)
			l = openLog(t, dir, cfg)
			defer l.Close()
			if got, w := readAll(t, l, 0), bytes.Join(append(want, more...), nil); !bytes.Equal(got, w) {
				t.Fatalf("after the second crash read back %d bytes, want %d", len(got), len(w))
			}
		})
	}
	t.Run("unflushed", func(t *testing.T) {
		l, dir := newLog(t, cfg)
		fill(t, l, 30)
		crash(l)
		stamp(t, dir)
		l = openLog(t, dir, cfg)
		defer l.Close()
		rp, ok, err := readOffsetCheckpoint(filepath.Join(dir, recoveryPointFile))
		if err != nil || !ok || rp != l.LogEndOffset() {
			t.Fatalf("recovery point after recovering unflushed records: %d, %v, %v; want %d", rp, ok, err, l.LogEndOffset())
		}
	})
}
