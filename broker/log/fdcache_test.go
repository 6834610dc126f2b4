package log

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/ktoolhq/ktool/internal/batch"
)

// openFilesUnder counts this process's descriptors on files under dir.
func openFilesUnder(t testing.TB, dir string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			n++
		}
	}
	return n
}

// manySegments appends batches of 10 records (offsets 10i..10i+9) until the
// log has at least n segments.
func manySegments(t testing.TB, l *Log, n int) {
	t.Helper()
	for i := 0; len(l.segs) < n; i++ {
		mustAppend(t, l, makeBatch(t, plain(10, int64(1000+i))), 0)
	}
}

func tinySegments() Config {
	cfg := testConfig()
	cfg.SegmentBytes = 2048
	return cfg
}

// TestDescriptorsPerSegment: a log of many segments holds one descriptor
// for its active segment and at most the cache's bound for the others,
// after appending, reading every segment, flushing and reopening.
func TestDescriptorsPerSegment(t *testing.T) {
	l, dir := newLog(t, tinySegments())
	manySegments(t, l, 60)
	check := func(when string) {
		t.Helper()
		if n, limit := openFilesUnder(t, dir), 1+privateFileCacheSize; n > limit {
			t.Fatalf("%s: %d descriptors open on %d segments, want at most %d", when, n, len(l.segs), limit)
		}
	}
	check("after appends")
	for off := int64(0); off < l.LogEndOffset(); off += 10 {
		r, err := l.Read(off, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		r.Release()
	}
	check("after reading every segment")
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	check("after a flush")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := openFilesUnder(t, dir); n != 0 {
		t.Fatalf("%d descriptors open after Close", n)
	}
	l = openLog(t, dir, tinySegments())
	defer l.Close()
	check("after reopening")
}

// TestFileCacheShared: logs sharing a cache of 3 keep at most 3 idle
// descriptors between them, and reopen evicted files on demand.
func TestFileCacheShared(t *testing.T) {
	cache := NewFileCache(3)
	cfg := tinySegments()
	cfg.FileCache = cache
	root := t.TempDir()
	var logs []*Log
	for p := range 4 {
		l := openLog(t, filepath.Join(root, fmt.Sprintf("t-%d", p)), cfg)
		defer l.Close()
		manySegments(t, l, 10)
		logs = append(logs, l)
	}
	before := cache.Stats().Opened
	for round := range 2 {
		for _, l := range logs {
			for off := int64(0); off < l.LogEndOffset(); off += 10 {
				r, err := l.Read(off, 1<<20, l.LogEndOffset(), true)
				if err != nil {
					t.Fatal(err)
				}
				got := regionBytes(t, r)
				r.Release()
				if h, err := batch.ParseHeader(got); err != nil || h.BaseOffset > off || h.LastOffset() < off {
					t.Fatalf("round %d: read at %d gave batch %+v, %v", round, off, h, err)
				}
				if st := cache.Stats(); st.Idle > 3 {
					t.Fatalf("%d idle descriptors, bound 3", st.Idle)
				}
			}
		}
	}
	st := cache.Stats()
	if st.Opened == before {
		t.Fatalf("no file was reopened: %+v", st)
	}
	if n, limit := openFilesUnder(t, root), len(logs)+3; n > limit || st.Open > limit {
		t.Fatalf("%d descriptors open (cache says %d), want at most %d", n, st.Open, limit)
	}
}

// TestRegionOutlivesEviction: a region keeps its descriptor while reads of
// other segments evict everything idle, so sendfile of it cannot meet a
// closed or reused descriptor; concurrent readers check every byte.
func TestRegionOutlivesEviction(t *testing.T) {
	cache := NewFileCache(1)
	cfg := tinySegments()
	cfg.FileCache = cache
	l, _ := newLog(t, cfg)
	manySegments(t, l, 40)
	leo := l.LogEndOffset()
	want := make(map[int64][]byte) // batch base offset -> bytes, read while nothing is evicted
	for off := int64(0); off < leo; off += 10 {
		r, err := l.Read(off, int32(batch.HeaderSize), leo, true)
		if err != nil {
			t.Fatal(err)
		}
		want[off] = regionBytes(t, r)
		r.Release()
	}

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			var held []Region
			for i := range 400 {
				off := rng.Int64N(leo/10) * 10
				r, err := l.Read(off, int32(batch.HeaderSize), leo, true)
				if err != nil {
					errs <- err
					return
				}
				held = append(held, r)
				// Hold a few regions across other readers' evictions, then
				// check each byte before releasing.
				if len(held) == 4 || i == 399 {
					for _, h := range held {
						b := make([]byte, h.Len)
						if _, err := h.File.ReadAt(b, h.Pos); err != nil {
							errs <- fmt.Errorf("region read: %w", err)
							return
						}
						base := int64(0)
						if hd, err := batch.ParseHeader(b); err == nil {
							base = hd.BaseOffset
						}
						if !bytes.Equal(b, want[base]) {
							errs <- fmt.Errorf("region at %d of %s changed", h.Pos, h.File.Name())
							return
						}
						h.Release()
					}
					held = held[:0]
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if st := cache.Stats(); st.Idle > 1 || st.Open > 2 {
		t.Fatalf("after every release: %+v, want at most 1 idle and 2 open", st)
	}
}

// TestRegionSurvivesDeletion: a region of a segment deleted below the log
// start keeps its descriptor and bytes through other reads' evictions.
func TestRegionSurvivesDeletion(t *testing.T) {
	cache := NewFileCache(1)
	cfg := tinySegments()
	cfg.FileCache = cache
	l, _ := newLog(t, cfg)
	manySegments(t, l, 10)
	leo := l.LogEndOffset()
	r, err := l.Read(0, 1<<20, leo, true)
	if err != nil {
		t.Fatal(err)
	}
	want := regionBytes(t, r)
	l.SetHighWatermark(leo)
	if _, err := l.DeleteRecordsBefore(leo); err != nil {
		t.Fatal(err)
	}
	for off := l.LogStartOffset(); off < leo; off += 10 {
		rr, err := l.Read(off, 1<<20, leo, true)
		if err != nil {
			t.Fatal(err)
		}
		rr.Release()
	}
	if got := regionBytes(t, r); !bytes.Equal(got, want) {
		t.Fatal("region of a deleted segment changed")
	}
	r.Release()
	r.Release()
}

// BenchmarkReadThroughCache reads 1 KiB regions at random offsets of a
// 64-segment log, with every segment's descriptor cached (hit) and with a
// cache of one (miss: an open and a close per read), alternated in one run.
func BenchmarkReadThroughCache(b *testing.B) {
	for _, c := range []struct {
		name string
		size int
	}{{"hit", 128}, {"miss", 1}} {
		b.Run(c.name, func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.SegmentBytes = 64 << 10
			cfg.FileCache = NewFileCache(c.size)
			l, _ := newLog(b, cfg)
			bt := makeBatch(b, batchSpec{n: 10, ts: 1, pid: -1, epoch: -1, seq: -1, valueSz: 100})
			for len(l.segs) < 64 {
				if _, err := l.AppendAsLeader(bt, 0); err != nil {
					b.Fatal(err)
				}
			}
			leo := l.LogEndOffset()
			rng := rand.New(rand.NewPCG(1, 2))
			b.ResetTimer()
			for b.Loop() {
				r, err := l.Read(rng.Int64N(leo), 1<<10, leo, true)
				if err != nil {
					b.Fatal(err)
				}
				r.Release()
			}
		})
	}
}

// TestIndexFilesAfterCrash: index entries reach their files at flush and
// roll, not at append; a crash leaves the active segment's files behind
// (or, mid-write, torn), and recovery rebuilds them to what they were.
func TestIndexFilesAfterCrash(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 16 << 10
	l, dir := newLog(t, cfg)
	var batches [][]byte
	for i := range 300 {
		b := makeBatch(t, plain(10, int64(1000+i)))
		mustAppend(t, l, b, 0)
		batches = append(batches, b)
		if i == 150 {
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	active := l.active()
	wantIdx := encodeOffsetEntries(nil, active.idx)
	wantTidx := encodeTimeEntries(nil, active.tidx)
	if len(active.idx) == 0 {
		t.Fatal("the active segment has no index entry; the test needs some")
	}
	type found struct {
		off, ts int64
		ok      bool
	}
	lookups := make([]found, 300)
	for i := range lookups {
		off, ts, _, ok := l.OffsetForTimestamp(int64(1000 + i))
		lookups[i] = found{off, ts, ok}
	}
	onDisk := readFile(t, segmentPath(dir, active.base, indexExt))
	if len(onDisk) >= len(wantIdx) {
		t.Fatalf("offset index file of the active segment holds %d bytes before any flush of it, want fewer than %d", len(onDisk), len(wantIdx))
	}
	crash(l)
	// A write torn by the crash: half an entry past what was written.
	f, err := os.OpenFile(segmentPath(dir, active.base, indexExt), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(wantIdx[len(onDisk) : len(onDisk)+4]); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	l = openLog(t, dir, cfg)
	defer l.Close()
	if !bytes.Equal(readAll(t, l, 0), bytes.Join(batches, nil)) {
		t.Fatal("records differ after the crash")
	}
	s := l.active()
	if s.base != active.base || !bytes.Equal(encodeOffsetEntries(nil, s.idx), wantIdx) {
		t.Fatalf("recovered offset index differs from the one before the crash: %v, want %v", s.idx, active.idx)
	}
	// Recovery seals the time index as if the segment had stopped being
	// active: one more entry, the largest timestamp.
	if got := encodeTimeEntries(nil, s.tidx); !bytes.HasPrefix(got, wantTidx) || len(got) > len(wantTidx)+timeEntrySize {
		t.Fatalf("recovered time index %v, want %v and at most the seal", s.tidx, active.tidx)
	}
	if got := readFile(t, segmentPath(dir, s.base, indexExt)); got != string(wantIdx) {
		t.Fatalf("offset index file holds %d bytes after recovery, want %d", len(got), len(wantIdx))
	}
	for i, want := range lookups {
		off, ts, _, ok := l.OffsetForTimestamp(int64(1000 + i))
		if got := (found{off, ts, ok}); got != want || !ok {
			t.Fatalf("timestamp lookup %d after recovery: %+v, before the crash %+v", 1000+i, got, want)
		}
	}
}

// inode is the inode number of the file at path.
func inode(t testing.TB, path string) uint64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Ino
}

// TestIdleCloseWritesNothing: closing a log nothing was written to since
// it opened clean rewrites no snapshot or checkpoint (each an fsynced
// replacement), only the marker; the log reopens clean with its records
// and producer state, and a write after that is closed the full way.
func TestIdleCloseWritesNothing(t *testing.T) {
	cfg := testConfig()
	l, dir := newLog(t, cfg)
	mustAppend(t, l, makeBatch(t, idem(9, 0, 0, 5)), 2)
	l.SetHighWatermark(l.LogEndOffset())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	files := []string{segmentPath(dir, 5, snapshotExt), filepath.Join(dir, recoveryPointFile), filepath.Join(dir, highWatermarkFile), filepath.Join(dir, leaderEpochFile)}
	before := make([]uint64, len(files))
	for i, f := range files {
		before[i] = inode(t, f)
	}
	l = openLog(t, dir, cfg)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		if inode(t, f) != before[i] {
			t.Errorf("%s was rewritten by closing an idle log", filepath.Base(f))
		}
	}
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownFile)); err != nil {
		t.Fatalf("no clean-shutdown marker: %v", err)
	}
	l = openLog(t, dir, cfg)
	if l.LogEndOffset() != 5 || l.HighWatermark() != 5 {
		t.Fatalf("LEO %d, HW %d after idle closes", l.LogEndOffset(), l.HighWatermark())
	}
	// The producer's next sequence is known: a duplicate is recognized.
	if res := mustAppend(t, l, makeBatch(t, idem(9, 0, 0, 5)), 2); !res.Duplicate {
		t.Fatalf("retry of the producer's batch not seen as a duplicate: %+v", res)
	}
	mustAppend(t, l, makeBatch(t, idem(9, 0, 5, 5)), 2)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(segmentPath(dir, 10, snapshotExt)); err != nil {
		t.Fatalf("no snapshot at the new end after a write: %v", err)
	}
	l = openLog(t, dir, cfg)
	defer l.Close()
	if l.LogEndOffset() != 10 {
		t.Fatalf("LEO %d, want 10", l.LogEndOffset())
	}
}
