package log

import (
	"slices"
	"testing"
)

// The epoch cache keeps Kafka's invariant: epoch E starts at the first batch
// carrying E, and the end of E is where the next larger epoch starts (the
// log end for the latest).
func TestEpochCacheAssign(t *testing.T) {
	for name, tc := range map[string]struct {
		before []epochEntry
		epoch  int32
		start  int64
		after  []epochEntry
	}{
		"new epoch":             {[]epochEntry{{1, 0}}, 2, 10, []epochEntry{{1, 0}, {2, 10}}},
		"same epoch later":      {[]epochEntry{{1, 0}, {2, 10}}, 2, 15, []epochEntry{{1, 0}, {2, 10}}},
		"same epoch earlier":    {[]epochEntry{{1, 0}, {2, 10}}, 2, 5, []epochEntry{{1, 0}, {2, 5}}},
		"undefined epoch":       {[]epochEntry{{1, 0}}, -1, 10, []epochEntry{{1, 0}}},
		"overwritten offsets":   {[]epochEntry{{1, 0}, {2, 10}, {3, 20}}, 4, 15, []epochEntry{{1, 0}, {2, 10}, {4, 15}}},
		"empty epoch after own": {[]epochEntry{{1, 0}, {2, 10}, {3, 20}}, 2, 20, []epochEntry{{1, 0}, {2, 10}}},
		"empty epochs after own": {[]epochEntry{{1, 0}, {2, 10}, {3, 20}, {5, 20}}, 2, 20,
			[]epochEntry{{1, 0}, {2, 10}}},
	} {
		t.Run(name, func(t *testing.T) {
			c := epochCache{entries: slices.Clone(tc.before)}
			changed := c.assign(tc.epoch, tc.start)
			if !slices.Equal(c.entries, tc.after) {
				t.Fatalf("assign(%d, %d) on %v: %v, want %v", tc.epoch, tc.start, tc.before, c.entries, tc.after)
			}
			if changed != !slices.Equal(tc.before, tc.after) {
				t.Fatalf("assign reported changed=%v", changed)
			}
		})
	}
}

func TestEpochCacheEndOffset(t *testing.T) {
	c := epochCache{entries: []epochEntry{{1, 0}, {2, 10}, {4, 30}}}
	for _, tc := range []struct {
		ask       int32
		epoch     int32
		end       int64
		situation string
	}{
		{1, 1, 10, "an older epoch ends where the next one starts"},
		{2, 2, 30, "epoch 2 ends where epoch 4 starts"},
		{3, 2, 30, "an unknown epoch: the largest below it"},
		{4, 4, 42, "the latest epoch ends at the log end"},
		{5, -1, -1, "an epoch above the latest is unknown"},
		{0, 0, 0, "below the first epoch: where the first starts"},
		{-1, -1, -1, "undefined"},
	} {
		if e, end := c.endOffsetFor(tc.ask, 42); e != tc.epoch || end != tc.end {
			t.Errorf("%s: endOffsetFor(%d) = (%d, %d), want (%d, %d)", tc.situation, tc.ask, e, end, tc.epoch, tc.end)
		}
	}
}

// A broker that led an epoch without writing to it and then follows a leader
// that holds more records of the previous epoch appends those records: the
// previous epoch keeps its start, so OffsetForLeaderEpoch still answers from
// where each epoch's first batch is.
func TestFollowerAppendAfterEmptyLeaderEpoch(t *testing.T) {
	leader, _ := newLog(t, testConfig())
	for i := range 4 {
		mustAppend(t, leader, makeBatch(t, plain(5, int64(i))), int32(1+i/2)) // epoch 1 at 0, epoch 2 at 10
	}
	f, _ := newLog(t, testConfig())
	if _, err := f.AppendAsFollower(readAll(t, leader, 0)); err != nil {
		t.Fatal(err)
	}
	f.AssignEpochStart(3, f.LogEndOffset()) // led epoch 3 at offset 20, wrote nothing
	for i := range 2 {
		mustAppend(t, leader, makeBatch(t, plain(5, int64(10+i))), 2)
	}
	if _, err := f.AppendAsFollower(readAll(t, leader, 20)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		epoch int32
		end   int64
	}{{1, 10}, {2, 30}} {
		if e, end := f.EndOffsetForEpoch(tc.epoch); e != tc.epoch || end != tc.end {
			t.Errorf("follower: epoch %d ends at (%d, %d), want (%d, %d); epochs %v", tc.epoch, e, end, tc.epoch, tc.end, f.epochs.entries)
		}
	}
	if !slices.Equal(f.epochs.entries, leader.epochs.entries) {
		t.Errorf("follower epochs %v, leader's %v", f.epochs.entries, leader.epochs.entries)
	}
}

// TestCleanLoadDefersEpochRewrite: a clean load that only drops entries past
// the log's end (an epoch that wrote nothing) leaves the file as it is, for
// the next change, flush or Close to rewrite, instead of an fsynced rewrite
// by every partition at start; the dropped entry stays dropped.
func TestCleanLoadDefersEpochRewrite(t *testing.T) {
	cfg := testConfig()
	l, dir := newLog(t, cfg)
	l.AssignEpochStart(3, 0)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	path := dir + "/" + leaderEpochFile
	if got := readFile(t, path); got != "0\n1\n3 0\n" {
		t.Fatalf("checkpoint %q", got)
	}
	l = openLog(t, dir, cfg)
	if got := readFile(t, path); got != "0\n1\n3 0\n" {
		t.Fatalf("checkpoint rewritten by a clean load: %q", got)
	}
	if e := l.LatestEpoch(); e != -1 {
		t.Fatalf("latest epoch %d after the load, want -1 (epoch 3 wrote nothing)", e)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "0\n0\n" {
		t.Fatalf("checkpoint after Close: %q", got)
	}
}

// TestLazyEpochEntryCrash: a new leader's epoch entry is in the cache at
// once but written to the checkpoint only by the next flush or Close
// (AssignEpochStart says why that is safe). A crash before any record of
// the epoch loses an entry that changed no answer; a crash after records of
// the epoch rebuilds it from them; a flush writes it before the recovery
// point passes those records.
func TestLazyEpochEntryCrash(t *testing.T) {
	cfg := testConfig()
	path := func(dir string) string { return dir + "/" + leaderEpochFile }

	// Epoch 1 holds offsets 0-9; the broker leads epoch 2 from 10.
	l, dir := newLog(t, cfg)
	mustAppend(t, l, makeBatch(t, plain(10, 0)), 1)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	onDisk := readFile(t, path(dir))
	l.AssignEpochStart(2, l.LogEndOffset())
	if got := readFile(t, path(dir)); got != onDisk {
		t.Fatalf("AssignEpochStart wrote the checkpoint: %q, was %q", got, onDisk)
	}
	if e, end := l.EndOffsetForEpoch(1); e != 1 || end != 10 {
		t.Fatalf("epoch 1 ends at (%d, %d) from the cache, want (1, 10)", e, end)
	}
	if e, end := l.EndOffsetForEpoch(2); e != 2 || end != 10 {
		t.Fatalf("epoch 2 ends at (%d, %d) from the cache, want (2, 10)", e, end)
	}
	crash(l)
	l = openLog(t, dir, cfg)
	if e, end := l.EndOffsetForEpoch(1); e != 1 || end != 10 {
		t.Fatalf("after a crash with no record of epoch 2: epoch 1 ends at (%d, %d), want (1, 10) as before", e, end)
	}

	// Records of epoch 2 are appended (and acknowledged), then a crash
	// before any flush: recovery rebuilds the entry from the batches.
	l.AssignEpochStart(2, l.LogEndOffset())
	mustAppend(t, l, makeBatch(t, plain(5, 10)), 2)
	crash(l)
	l = openLog(t, dir, cfg)
	if e := l.LatestEpoch(); e != 2 {
		t.Fatalf("latest epoch %d after recovery, want 2", e)
	}
	if e, end := l.EndOffsetForEpoch(1); e != 1 || end != 10 {
		t.Fatalf("after recovery: epoch 1 ends at (%d, %d), want (1, 10)", e, end)
	}

	// A flush moves the recovery point past epoch 3's records: the entry is
	// in the checkpoint file first, so a crash after it keeps it even though
	// recovery rescans nothing below the recovery point.
	l.AssignEpochStart(3, l.LogEndOffset())
	mustAppend(t, l, makeBatch(t, plain(5, 15)), 3)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path(dir)); got != "0\n3\n1 0\n2 10\n3 15\n" {
		t.Fatalf("checkpoint after the flush: %q", got)
	}
	crash(l)
	l = openLog(t, dir, cfg)
	t.Cleanup(func() { _ = l.Close() })
	if e, end := l.EndOffsetForEpoch(2); e != 2 || end != 15 {
		t.Fatalf("after a crash past the flush: epoch 2 ends at (%d, %d), want (2, 15)", e, end)
	}
}
