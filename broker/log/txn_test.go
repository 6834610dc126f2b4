package log

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/internal/batch"
)

// txnConfig keeps the clock near the test batches' timestamps, so that
// markers (stamped now) do not roll segments by segment.ms.
func txnConfig() Config {
	cfg := testConfig()
	cfg.Now = func() time.Time { return time.UnixMilli(5000) }
	return cfg
}

func mustMarker(t testing.TB, l *Log, pid int64, epoch int16, typ batch.ControlType, coordEpoch int32) int64 {
	t.Helper()
	res, err := l.AppendMarker(pid, epoch, batch.Marker{Type: typ, CoordinatorEpoch: coordEpoch}, 0)
	if err != nil {
		t.Fatalf("marker %s for %d: %v", typ, pid, err)
	}
	return res.BaseOffset
}

func wantLSO(t testing.TB, l *Log, want int64) {
	t.Helper()
	if got := l.LastStableOffset(); got != want {
		t.Fatalf("LSO %d, want %d (hw %d, first unstable %d)", got, want, l.HighWatermark(), l.FirstUnstableOffset())
	}
}

// txnScenario writes: producer 1 txn data at 0-1, plain data 2-3, producer 2
// txn data at 4-5, producer 1 COMMIT at 6, producer 2 more data at 7, and
// producer 2 ABORT at 8.
func txnScenario(t testing.TB, l *Log) {
	t.Helper()
	mustAppend(t, l, makeBatch(t, txnBatch(1, 0, 0, 2)), 0)
	mustAppend(t, l, makeBatch(t, plain(2, 1000)), 0)
	mustAppend(t, l, makeBatch(t, txnBatch(2, 0, 0, 2)), 0)
	if off := mustMarker(t, l, 1, 0, batch.ControlCommit, 0); off != 6 {
		t.Fatalf("commit at %d", off)
	}
	mustAppend(t, l, makeBatch(t, txnBatch(2, 0, 2, 1)), 0)
	if off := mustMarker(t, l, 2, 0, batch.ControlAbort, 0); off != 8 {
		t.Fatalf("abort at %d", off)
	}
}

func TestLastStableOffset(t *testing.T) {
	l, _ := newLog(t, txnConfig())
	mustAppend(t, l, makeBatch(t, txnBatch(1, 0, 0, 2)), 0)
	mustAppend(t, l, makeBatch(t, plain(2, 1000)), 0)
	mustAppend(t, l, makeBatch(t, txnBatch(2, 0, 0, 2)), 0)
	l.SetHighWatermark(6)
	wantLSO(t, l, 0)
	mustMarker(t, l, 1, 0, batch.ControlCommit, 0)
	wantLSO(t, l, 4) // producer 2 still open
	l.SetHighWatermark(7)
	mustMarker(t, l, 2, 0, batch.ControlAbort, 0)
	wantLSO(t, l, 7) // nothing open: the high watermark
	l.SetHighWatermark(8)
	wantLSO(t, l, 8)
	got := l.AbortedTxns(0, 8)
	want := []AbortedTxn{{ProducerID: 2, FirstOffset: 4, LastOffset: 7, LastStableOffset: 8}}
	if !slices.Equal(got, want) {
		t.Fatalf("aborted %+v, want %+v", got, want)
	}
	if got := l.AbortedTxns(8, 9); len(got) != 0 {
		t.Fatalf("aborted after the marker: %+v", got)
	}
	if got := l.AbortedTxns(0, 4); len(got) != 0 {
		t.Fatalf("aborted before its data: %+v", got)
	}
}

func TestAbortedTxnsStopAtStableOffset(t *testing.T) {
	l, _ := newLog(t, txnConfig())
	// Two overlapping aborted transactions, then a later one.
	mustAppend(t, l, makeBatch(t, txnBatch(1, 0, 0, 1)), 0) // 0
	mustAppend(t, l, makeBatch(t, txnBatch(2, 0, 0, 1)), 0) // 1
	mustMarker(t, l, 1, 0, batch.ControlAbort, 0)           // 2, LSO after = 1 (producer 2 open)
	mustMarker(t, l, 2, 0, batch.ControlAbort, 0)           // 3, LSO after = 4
	mustAppend(t, l, makeBatch(t, txnBatch(3, 0, 0, 1)), 0) // 4
	mustMarker(t, l, 3, 0, batch.ControlAbort, 0)           // 5
	all := l.AbortedTxns(0, 6)
	if len(all) != 3 || all[0].LastStableOffset != 1 || all[1].LastStableOffset != 4 || all[2].FirstOffset != 4 {
		t.Fatalf("aborted %+v", all)
	}
	if got := l.AbortedTxns(2, 4); len(got) != 2 || got[0].ProducerID != 1 || got[1].ProducerID != 2 {
		t.Fatalf("aborted in [2,4): %+v", got)
	}
}

func TestTxnFencing(t *testing.T) {
	l, _ := newLog(t, txnConfig())
	mustAppend(t, l, makeBatch(t, txnBatch(1, 3, 0, 2)), 0)
	// A non-transactional batch inside the open transaction.
	_, err := l.AppendAsLeader(makeBatch(t, idem(1, 3, 2, 1)), 0)
	wantKerr(t, err, kerr.InvalidTxnState)
	// A marker of an older producer epoch closes nothing.
	_, err = l.AppendMarker(1, 2, batch.Marker{Type: batch.ControlAbort}, 0)
	wantKerr(t, err, kerr.InvalidProducerEpoch)
	l.SetHighWatermark(l.LogEndOffset())
	wantLSO(t, l, 0)
	mustMarker(t, l, 1, 3, batch.ControlCommit, 5)
	// A coordinator older than the one that wrote the last marker.
	_, err = l.AppendMarker(1, 3, batch.Marker{Type: batch.ControlCommit, CoordinatorEpoch: 4}, 0)
	wantKerr(t, err, kerr.TransactionCoordinatorFenced)
	// A resent marker from the same coordinator is appended again.
	mustMarker(t, l, 1, 3, batch.ControlCommit, 5)
	// A bumped epoch in a marker (the coordinator fenced the producer)
	// resets sequences: the new epoch starts at 0.
	mustMarker(t, l, 1, 4, batch.ControlAbort, 5)
	_, err = l.AppendAsLeader(makeBatch(t, txnBatch(1, 4, 2, 1)), 0)
	wantKerr(t, err, kerr.OutOfOrderSequenceNumber)
	mustAppend(t, l, makeBatch(t, txnBatch(1, 4, 0, 1)), 0)
	_, err = l.AppendAsLeader(makeBatch(t, txnBatch(1, 3, 2, 1)), 0)
	wantKerr(t, err, kerr.InvalidProducerEpoch)
}

func TestTxnVerification(t *testing.T) {
	l, _ := newLog(t, txnConfig())
	tok, need := l.TxnVerificationToken(1, 0)
	if !need || tok != -1 {
		t.Fatalf("unknown producer: token %d, need %v", tok, need)
	}
	_, err := l.AppendAsLeaderTxn(makeBatch(t, txnBatch(1, 0, 0, 1)), 0, &TxnVerification{Token: tok, OK: false})
	wantKerr(t, err, kerr.InvalidTxnState)
	if _, err := l.AppendAsLeaderTxn(makeBatch(t, txnBatch(1, 0, 0, 1)), 0, &TxnVerification{Token: tok, OK: true}); err != nil {
		t.Fatal(err)
	}
	if _, need := l.TxnVerificationToken(1, 0); need {
		t.Fatal("an open transaction needs verification")
	}
	if _, err := l.AppendAsLeaderTxn(makeBatch(t, txnBatch(1, 0, 1, 1)), 0, &TxnVerification{Token: 99}); err != nil {
		t.Fatalf("a batch of the open transaction: %v", err)
	}
	mustMarker(t, l, 1, 0, batch.ControlCommit, 0)
	tok, need = l.TxnVerificationToken(1, 0)
	if !need || tok != 2 {
		t.Fatalf("after the commit: token %d, need %v", tok, need)
	}
	// The coordinator confirmed, but a (late) marker landed meanwhile.
	mustMarker(t, l, 1, 0, batch.ControlAbort, 0)
	_, err = l.AppendAsLeaderTxn(makeBatch(t, txnBatch(1, 0, 2, 1)), 0, &TxnVerification{Token: tok, OK: true})
	wantKerr(t, err, kerr.InvalidTxnState)
	if _, need := l.TxnVerificationToken(1, 0); !need {
		t.Fatal("closed transaction needs no verification")
	}
}

// TestTxnIndexFormat pins the .txnindex bytes: Kafka's 34-byte entries.
func TestTxnIndexFormat(t *testing.T) {
	l, dir := newLog(t, txnConfig())
	txnScenario(t, l)
	var want []byte
	want = binary.BigEndian.AppendUint16(want, 0) // version
	want = binary.BigEndian.AppendUint64(want, 2) // producer id
	want = binary.BigEndian.AppendUint64(want, 4) // first offset
	want = binary.BigEndian.AppendUint64(want, 8) // last offset (the marker)
	want = binary.BigEndian.AppendUint64(want, 9) // last stable offset after it
	got, err := os.ReadFile(segmentPath(dir, 0, txnIndexExt))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != txnEntrySize || !bytes.Equal(got, want) {
		t.Fatalf("txnindex %x, want %x", got, want)
	}
}

func TestTxnStateRecovery(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(t *testing.T, l *Log, index string)
	}{
		{"clean", func(t *testing.T, l *Log, index string) {
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		}},
		{"crash without index", func(t *testing.T, l *Log, index string) {
			crash(l)
			if err := os.Remove(index); err != nil {
				t.Fatal(err)
			}
		}},
		{"crash with a damaged index", func(t *testing.T, l *Log, index string) {
			crash(l)
			if err := os.WriteFile(index, []byte("garbage"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := txnConfig()
			cfg.SegmentBytes = 400
			l, dir := newLog(t, cfg)
			txnScenario(t, l)
			// An open transaction of producer 3 spans segments.
			mustAppend(t, l, makeBatch(t, txnBatch(3, 0, 0, 5)), 0)
			first := l.LogEndOffset() - 5
			for i := range 6 {
				mustAppend(t, l, makeBatch(t, plain(3, int64(2000+i))), 0)
			}
			l.SetHighWatermark(l.LogEndOffset())
			wantAborted := l.AbortedTxns(0, l.LogEndOffset())
			path := segmentPath(dir, l.segs[l.segmentFor(8)].base, txnIndexExt)
			index, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tc.stop(t, l, path)

			l = openLog(t, dir, cfg)
			defer l.Close()
			l.SetHighWatermark(l.LogEndOffset()) // a crash loses the unflushed checkpoint
			wantLSO(t, l, first)
			if got := l.AbortedTxns(0, l.LogEndOffset()); !slices.Equal(got, wantAborted) || len(got) != 1 {
				t.Fatalf("aborted after reopen %+v, want %+v", got, wantAborted)
			}
			if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, index) {
				t.Fatalf("txnindex after reopen %x (%v), want %x", got, err, index)
			}
			// The open transaction is still producer 3's.
			_, err = l.AppendAsLeader(makeBatch(t, idem(3, 0, 5, 1)), 0)
			wantKerr(t, err, kerr.InvalidTxnState)
			mustMarker(t, l, 3, 0, batch.ControlCommit, 0)
			l.SetHighWatermark(l.LogEndOffset())
			wantLSO(t, l, l.LogEndOffset())
		})
	}
}

func TestTxnTruncation(t *testing.T) {
	l, dir := newLog(t, txnConfig())
	txnScenario(t, l)
	// Cut the ABORT marker of producer 2: its transaction is open again.
	if err := l.TruncateTo(8); err != nil {
		t.Fatal(err)
	}
	l.SetHighWatermark(8)
	wantLSO(t, l, 4)
	if got := l.AbortedTxns(0, 8); len(got) != 0 {
		t.Fatalf("aborted after truncating the marker: %+v", got)
	}
	if _, err := os.Stat(segmentPath(dir, 0, txnIndexExt)); !os.IsNotExist(err) {
		t.Fatalf("txnindex kept after its only marker went: %v", err)
	}
	if err := l.TruncateFullyAndStartAt(20); err != nil {
		t.Fatal(err)
	}
	wantLSO(t, l, 20)
}

func TestRetentionKeepsOpenTransaction(t *testing.T) {
	clock := newClock()
	cfg := testConfig()
	cfg.SegmentBytes = 300
	cfg.RetentionMs = 10_000
	cfg.Now = clock.Now
	l, dir := newLog(t, cfg)
	old := clock.now.UnixMilli() - 60_000
	mustAppend(t, l, makeBatch(t, plain(3, old)), 0)
	mustAppend(t, l, makeBatch(t, plain(3, old)), 0)
	openBatch := makeBatch(t, txnBatch(7, 0, 0, 2))
	binary.BigEndian.PutUint64(openBatch[batch.OffFirstTimestamp:], uint64(old))
	binary.BigEndian.PutUint64(openBatch[batch.OffMaxTimestamp:], uint64(old))
	binary.BigEndian.PutUint32(openBatch[batch.OffCRC:], batch.Checksum(openBatch))
	first := mustAppend(t, l, openBatch, 0).BaseOffset
	for range 6 {
		mustAppend(t, l, makeBatch(t, plain(3, old)), 0)
	}
	mustAppend(t, l, makeBatch(t, plain(1, clock.now.UnixMilli())), 0)
	l.SetHighWatermark(l.LogEndOffset())
	if len(segmentFiles(t, dir)) < 3 {
		t.Fatalf("segments %v: the test needs several", segmentFiles(t, dir))
	}
	if _, err := l.EnforceRetention(); err != nil {
		t.Fatal(err)
	}
	if ls := l.LogStartOffset(); ls > first {
		t.Fatalf("retention moved the log start to %d past the open transaction at %d", ls, first)
	}
	wantLSO(t, l, first)
	_, err := l.DeleteRecordsBefore(first + 1)
	wantKerr(t, err, kerr.OffsetOutOfRange)
	mustMarker(t, l, 7, 0, batch.ControlAbort, 0)
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.EnforceRetention(); err != nil {
		t.Fatal(err)
	}
	if ls := l.LogStartOffset(); ls <= first {
		t.Fatalf("log start %d after the transaction closed, want past %d", ls, first)
	}
	if got := l.AbortedTxns(0, l.LogEndOffset()); len(got) != 1 {
		t.Fatalf("the ABORT marker's entry lives in the active segment: %+v", got)
	}
}

func TestFollowerTxnState(t *testing.T) {
	leader, _ := newLog(t, txnConfig())
	txnScenario(t, leader)
	mustAppend(t, leader, makeBatch(t, txnBatch(5, 0, 0, 1)), 0)
	follower, _ := newLog(t, txnConfig())
	if _, err := follower.AppendAsFollower(readAll(t, leader, 0)); err != nil {
		t.Fatal(err)
	}
	follower.SetHighWatermark(follower.LogEndOffset())
	wantLSO(t, follower, 9)
	if got, want := follower.AbortedTxns(0, 10), leader.AbortedTxns(0, 10); !slices.Equal(got, want) || len(got) != 1 {
		t.Fatalf("follower aborted %+v, leader %+v", got, want)
	}
}

func TestSnapshotVersion1(t *testing.T) {
	b, err := os.ReadFile("testdata/snapshot-v1")
	if err != nil {
		t.Fatal(err)
	}
	ps, off, err := decodeSnapshot(b)
	if err != nil || off != 24 || len(ps.m) != 1 {
		t.Fatalf("version 1 snapshot: %d producers at %d, %v", len(ps.m), off, err)
	}
	e := ps.m[4]
	if e == nil || e.txnFirst != -1 || e.coordEpoch != -1 || len(e.batches) != maxProducerBatches {
		t.Fatalf("producer 4 from a version 1 snapshot: %+v", e)
	}
	ps.m[4].txnFirst = 22
	ps.put(4, ps.m[4])
	got, _, err := decodeSnapshot(ps.encodeSnapshot(30))
	if err != nil || got.m[4].txnFirst != 22 || got.firstUnstable() != 22 {
		t.Fatalf("version 2 round trip: %+v, %v", got.m[4], err)
	}
}

// TestCleanTransactions: the cleaner drops aborted transactions' records
// without letting them shadow older values, keeps committed ones and the
// markers, and cleans nothing from the first open transaction on.
func TestCleanTransactions(t *testing.T) {
	clock := newClock()
	cfg := compactConfig()
	cfg.Now = clock.Now
	cfg.SegmentBytes = 400
	l, dir := newLog(t, cfg)
	now := clock.now.UnixMilli()
	txnKeyed := func(pid int64, seq int32, recs ...kv) []byte {
		s := keyed(now, recs...)
		s.pid, s.epoch, s.seq, s.txn = pid, 0, seq, true
		return keyedBatch(t, s)
	}
	mustAppend(t, l, keyedBatch(t, keyed(now, put("k1", "committed"), put("k3", "before-open"))), 0)
	mustAppend(t, l, txnKeyed(5, 0, put("k1", "aborted"), put("k4", "aborted-only")), 0)
	mustMarker(t, l, 5, 0, batch.ControlAbort, 0)
	mustAppend(t, l, txnKeyed(6, 0, put("k2", "txn-committed")), 0)
	mustMarker(t, l, 6, 0, batch.ControlCommit, 0)
	open := mustAppend(t, l, txnKeyed(7, 0, put("k3", "open")), 0).BaseOffset
	mustAppend(t, l, keyedBatch(t, keyed(now, put("k3", "after-open"))), 0)
	for i := range 12 {
		mustAppend(t, l, keyedBatch(t, keyed(now, put(fmt.Sprint("f", i), "filler"))), 0)
	}
	l.SetHighWatermark(l.LogEndOffset())
	wantLSO(t, l, open)
	res := mustClean(t, l)
	if res.RecordsRemoved == 0 {
		t.Fatalf("clean result %+v", res)
	}
	recs, hdrs := decodeLog(t, l)
	values := map[string][]string{}
	for _, r := range recs {
		if len(r.key) > 0 && r.key[0] == 'k' {
			values[r.key] = append(values[r.key], r.value)
		}
	}
	want := map[string][]string{
		"k1": {"committed"},                         // the aborted value shadowed nothing, and went
		"k2": {"txn-committed"},                     // committed transactions are cleaned as others
		"k3": {"before-open", "open", "after-open"}, // nothing is cleaned from the open transaction on
	}
	for k, w := range want {
		if !slices.Equal(values[k], w) {
			t.Errorf("key %s: %v, want %v", k, values[k], w)
		}
	}
	if v, ok := values["k4"]; ok {
		t.Errorf("an aborted transaction's record survived: %v", v)
	}
	markers := 0
	for _, h := range hdrs {
		if h.Control() {
			markers++
		}
	}
	if markers != 2 {
		t.Errorf("%d markers after cleaning, want both kept", markers)
	}
	wantLSO(t, l, open)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, cfg)
	defer l.Close()
	l.SetHighWatermark(l.LogEndOffset())
	wantLSO(t, l, open)
	if got := l.AbortedTxns(0, l.LogEndOffset()); len(got) != 1 || got[0].ProducerID != 5 {
		t.Fatalf("aborted transactions after cleaning and reopening: %+v", got)
	}
}
