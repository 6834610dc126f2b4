package log

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ktoolhq/ktool/internal/batch"
)

// markerView is a marker as a pass left it.
type markerView struct {
	pid     int64
	typ     batch.ControlType
	ts      int64 // the marker record's timestamp
	horizon int64 // -1 without a delete horizon
}

// markersOf returns the log's markers by offset.
func markersOf(t testing.TB, l *Log) map[int64]markerView {
	t.Helper()
	data := readAll(t, l, l.LogStartOffset())
	out := map[int64]markerView{}
	for pos := 0; pos < len(data); {
		h, err := batch.ParseHeader(data[pos:])
		if err != nil {
			t.Fatal(err)
		}
		b := data[pos : pos+int(h.Size())]
		pos += int(h.Size())
		if !h.Control() {
			continue
		}
		m, err := batch.MarkerOf(b)
		if err != nil {
			t.Fatalf("marker at %d: %v", h.BaseOffset, err)
		}
		v := markerView{pid: h.ProducerID, typ: m.Type, horizon: -1}
		if hz, ok := h.DeleteHorizon(); ok {
			v.horizon = hz
		}
		if err := batch.EachRecord(h, b[batch.HeaderSize:], func(r batch.Record) error {
			v.ts = h.FirstTimestamp + r.TimestampDelta
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		out[h.BaseOffset] = v
	}
	return out
}

// tombstoneBatches returns the headers of the batches holding a tombstone
// of key, and the tombstones' timestamps.
func tombstoneBatches(t testing.TB, l *Log, key string) ([]batch.Header, []int64) {
	t.Helper()
	data := readAll(t, l, l.LogStartOffset())
	var hdrs []batch.Header
	var tss []int64
	for pos := 0; pos < len(data); {
		h, err := batch.ParseHeader(data[pos:])
		if err != nil {
			t.Fatal(err)
		}
		b := data[pos : pos+int(h.Size())]
		pos += int(h.Size())
		found := false
		if err := eachRecord(t.Context(), testCodecs, h, b, func(r batch.Record) error {
			if string(r.Key) == key && r.Value == nil {
				found = true
				tss = append(tss, h.FirstTimestamp+r.TimestampDelta)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if found {
			hdrs = append(hdrs, h)
		}
	}
	return hdrs, tss
}

// TestCleanRemovesMarkersAfterDeleteHorizon follows transaction markers and a
// tombstone through the passes KIP-534 takes to remove them: the pass that
// removes a transaction's last data keeps its marker; the next stamps the
// marker's delete horizon and drops the aborted transaction's index entry;
// a pass after delete.retention.ms removes it. The markers of each
// producer's last transaction stay. Replaying the log from any producer
// snapshot left on disk (one was taken inside the aborted transaction), and
// reopening it cleanly or after a crash, recovers the same last stable
// offset and index.
func TestCleanRemovesMarkersAfterDeleteHorizon(t *testing.T) {
	clock := newClock()
	cfg := compactConfig()
	cfg.Now = clock.Now
	cfg.SegmentBytes = 1 << 20
	cfg.SegmentMs = 10 * time.Minute.Milliseconds()
	cfg.DeleteRetentionMs = time.Hour.Milliseconds()
	l, dir := newLog(t, cfg)
	txnKeyed := func(pid int64, seq int32, recs ...kv) []byte {
		s := keyed(clock.now.UnixMilli(), recs...)
		s.pid, s.epoch, s.seq, s.txn = pid, 0, seq, true
		return keyedBatch(t, s)
	}
	filler := 0
	fill := func(n int) int64 {
		for range n {
			mustAppend(t, l, keyedBatch(t, keyed(clock.now.UnixMilli(), put(fmt.Sprint("f", filler), "filler"))), 0)
			filler++
		}
		return l.LogEndOffset()
	}
	// Segment 0 holds the aborted transaction's data; segment 1, rolled
	// by segment.ms with a producer snapshot inside the transaction, its
	// marker and the rest. The passes are made due by raising the high
	// watermark, so that no roll takes a newer snapshot.
	aborted := mustAppend(t, l, txnKeyed(5, 0, put("k1", "aborted")), 0).BaseOffset
	fill(3)
	clock.advance(11 * time.Minute)
	inside := fill(1) - 1
	markerA := mustMarker(t, l, 5, 0, batch.ControlAbort, 0)
	mustAppend(t, l, txnKeyed(5, 1, put("k9", "p5-later")), 0)
	markerB := mustMarker(t, l, 5, 0, batch.ControlCommit, 0)
	mustAppend(t, l, txnKeyed(6, 0, put("k2", "committed-then-superseded")), 0)
	markerC := mustMarker(t, l, 6, 0, batch.ControlCommit, 0)
	mustAppend(t, l, keyedBatch(t, keyed(clock.now.UnixMilli(), put("k2", "plain"), put("k3", "to-delete"))), 0)
	mustAppend(t, l, txnKeyed(6, 1, put("k8", "p6-later")), 0)
	markerD := mustMarker(t, l, 6, 0, batch.ControlCommit, 0)
	tombTs := clock.now.UnixMilli()
	mustAppend(t, l, keyedBatch(t, keyed(tombTs, del("k3"))), 0)
	hws := []int64{fill(2), fill(2), fill(2), fill(2)}
	clock.advance(11 * time.Minute)
	fill(1)
	if offs, _ := listSnapshots(dir); len(offs) != 2 || offs[0] != inside {
		t.Fatalf("producer snapshots at %v, want one inside the aborted transaction at %d", offs, inside)
	}
	markerTs := markersOf(t, l)[markerA].ts

	wantMarkers := func(pass string, want map[int64]bool, stamped map[int64]bool) {
		t.Helper()
		got := markersOf(t, l)
		for off, keep := range want {
			v, ok := got[off]
			switch {
			case ok != keep:
				t.Fatalf("%s: marker at %d present %v, want %v (markers %+v)", pass, off, ok, keep, got)
			case ok && (v.horizon >= 0) != stamped[off]:
				t.Fatalf("%s: marker at %d has delete horizon %d, want stamped %v", pass, off, v.horizon, stamped[off])
			case ok && v.ts != markerTs:
				t.Fatalf("%s: marker at %d has timestamp %d, want %d", pass, off, v.ts, markerTs)
			}
		}
	}
	wantAborted := func(pass string, n int) {
		t.Helper()
		if got := l.AbortedTxns(0, l.LogEndOffset()); len(got) != n {
			t.Fatalf("%s: aborted transactions %+v, want %d", pass, got, n)
		}
	}
	all := map[int64]bool{markerA: true, markerB: true, markerC: true, markerD: true}

	// Pass 1 removes the aborted and the superseded committed data; their
	// markers stay, unstamped, and so does the index entry of the abort.
	// The tombstone's batch gets its delete horizon.
	l.SetHighWatermark(hws[0])
	mustClean(t, l)
	recs, _ := decodeLog(t, l)
	for _, r := range recs {
		if r.key == "k1" || r.value == "committed-then-superseded" {
			t.Fatalf("pass 1 kept %+v at %d", r.kv, r.off)
		}
	}
	wantMarkers("pass 1", all, nil)
	wantAborted("pass 1", 1)
	hdrs, tss := tombstoneBatches(t, l, "k3")
	if len(hdrs) != 1 || tss[0] != tombTs {
		t.Fatalf("pass 1: tombstone batches %+v at %v, want one at %d", hdrs, tss, tombTs)
	}
	if hz, ok := hdrs[0].DeleteHorizon(); !ok || hz != clock.now.UnixMilli()+cfg.DeleteRetentionMs {
		t.Fatalf("pass 1: tombstone batch delete horizon %d (%v), want now + delete.retention.ms", hz, ok)
	}

	// Pass 2 finds nothing left of transactions A and C: their markers get
	// a delete horizon, the abort loses its index entry.
	clock.advance(time.Minute)
	l.SetHighWatermark(hws[1])
	mustClean(t, l)
	stamped := map[int64]bool{markerA: true, markerC: true}
	wantMarkers("pass 2", all, stamped)
	if hz := markersOf(t, l)[markerA].horizon; hz != clock.now.UnixMilli()+cfg.DeleteRetentionMs {
		t.Fatalf("pass 2: delete horizon %d, want now + delete.retention.ms", hz)
	}
	wantAborted("pass 2", 0)
	if hdrs, _ := tombstoneBatches(t, l, "k3"); len(hdrs) != 1 {
		t.Fatal("pass 2 removed the tombstone before its delete horizon")
	}

	// Pass 3, past the tombstone's horizon but not the markers', removes
	// only the tombstone.
	clock.advance(time.Hour - 30*time.Second)
	l.SetHighWatermark(hws[2])
	mustClean(t, l)
	wantMarkers("pass 3", all, stamped)
	if hdrs, _ := tombstoneBatches(t, l, "k3"); len(hdrs) != 0 {
		t.Fatal("pass 3 kept the tombstone after its delete horizon")
	}

	// Pass 4, past the markers' horizon, removes them; the producers' last
	// markers stay.
	clock.advance(time.Minute)
	l.SetHighWatermark(hws[3])
	mustClean(t, l)
	wantMarkers("pass 4", map[int64]bool{markerA: false, markerB: true, markerC: false, markerD: true}, nil)
	l.SetHighWatermark(l.LogEndOffset())
	lso := l.LastStableOffset()
	if lso != l.HighWatermark() {
		t.Fatalf("LSO %d, want the high watermark %d", lso, l.HighWatermark())
	}

	wantState := func(how string) {
		t.Helper()
		if got := l.LastStableOffset(); got != lso {
			t.Fatalf("after %s: LSO %d, want %d (first unstable %d; the aborted transaction started at %d)", how, got, lso, l.FirstUnstableOffset(), aborted)
		}
		wantAborted("after "+how, 0)
	}
	// Replaying from a snapshot taken inside a transaction whose marker is
	// gone would reopen it, and hang the LSO if no later marker of its
	// producer closed it (a producer evicted from the state): such
	// snapshots go with the marker.
	offs, err := listSnapshots(dir)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(offs, inside) {
		t.Fatalf("producer snapshots at %v: the one at %d, inside the transaction whose marker went, stayed", offs, inside)
	}
	for _, off := range append(offs, -1) {
		l.appendMu.Lock()
		err := l.rebuildProducerState(off)
		l.appendMu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		wantState(fmt.Sprintf("a replay from the snapshot at or below %d", off))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, cfg)
	l.SetHighWatermark(l.LogEndOffset())
	wantState("a clean shutdown")
	crash(l)
	l = openLog(t, dir, cfg)
	l.SetHighWatermark(l.LogEndOffset())
	wantState("a crash")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}
