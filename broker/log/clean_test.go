package log

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy/xerial"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/batch"
)

// kv is a test record: a key (none when noKey) and a value (none for a
// tombstone).
type kv struct {
	key, value  string
	tomb, noKey bool
}

func put(k, v string) kv { return kv{key: k, value: v} }
func del(k string) kv    { return kv{key: k, tomb: true} }

// keyedSpec describes a batch of keyed records. Zero codec is none;
// xerialSnappy writes snappy in the Java client's framing.
type keyedSpec struct {
	recs         []kv
	ts           int64
	codec        int8
	xerialSnappy bool
	pid          int64
	epoch        int16
	seq          int32
	txn          bool // transactional
}

func keyed(ts int64, recs ...kv) keyedSpec {
	return keyedSpec{recs: recs, ts: ts, pid: -1, epoch: -1, seq: -1}
}

func appendVarbytes(dst []byte, b []byte, null bool) []byte {
	if null {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

// keyedBatch encodes a batch with franz-go's compressors, independent of the
// cleaner's own.
func keyedBatch(t testing.TB, s keyedSpec) []byte {
	t.Helper()
	var raw []byte
	for i, r := range s.recs {
		body := []byte{0}
		body = binary.AppendVarint(body, int64(i))
		body = binary.AppendVarint(body, int64(i))
		body = appendVarbytes(body, []byte(r.key), r.noKey)
		body = appendVarbytes(body, []byte(r.value), r.tomb)
		body = binary.AppendVarint(body, 0)
		raw = binary.AppendVarint(raw, int64(len(body)))
		raw = append(raw, body...)
	}
	switch {
	case s.xerialSnappy:
		raw = xerial.Encode(nil, raw)
	case s.codec != 0:
		codecs := []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}
		c, err := kgo.DefaultCompressor(codecs[s.codec])
		if err != nil {
			t.Fatal(err)
		}
		out, typ := c.Compress(new(bytes.Buffer), raw)
		if int8(typ) != s.codec {
			t.Fatalf("compressed with codec %d, want %d", typ, s.codec)
		}
		raw = append([]byte(nil), out...)
	}
	b := kmsg.RecordBatch{
		Length:          int32(batch.MinLength + len(raw)),
		Magic:           2,
		Attributes:      int16(s.codec),
		LastOffsetDelta: int32(len(s.recs) - 1),
		FirstTimestamp:  s.ts,
		MaxTimestamp:    s.ts + int64(len(s.recs)-1),
		ProducerID:      s.pid,
		ProducerEpoch:   s.epoch,
		FirstSequence:   s.seq,
		NumRecords:      int32(len(s.recs)),
		Records:         raw,
	}
	if s.txn {
		b.Attributes |= batch.AttrTransactional
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[batch.OffCRC:], batch.Checksum(out))
	return out
}

// rec is a record read back from a log.
type rec struct {
	off int64
	kv
}

// decodeLog reads every record from the log start with franz-go's
// decompressors and record decoder.
func decodeLog(t testing.TB, l *Log) ([]rec, []batch.Header) {
	t.Helper()
	data := readAll(t, l, l.LogStartOffset())
	hdrs := headers2(t, data)
	dec := kgo.DefaultDecompressor()
	var out []rec
	pos := 0
	for _, h := range hdrs {
		b := data[pos : pos+int(h.Size())]
		pos += int(h.Size())
		recs, err := dec.Decompress(b[batch.HeaderSize:], kgo.CompressionCodecType(h.Compression()))
		if err != nil {
			t.Fatalf("batch %d: %v", h.BaseOffset, err)
		}
		for range h.NumRecords {
			length, n := binary.Varint(recs)
			if n <= 0 {
				t.Fatalf("batch %d: bad record length", h.BaseOffset)
			}
			var r kmsg.Record
			if err := r.ReadFrom(recs[:n+int(length)]); err != nil {
				t.Fatalf("batch %d: %v", h.BaseOffset, err)
			}
			recs = recs[n+int(length):]
			off := h.BaseOffset + int64(r.OffsetDelta)
			if off > h.LastOffset() {
				t.Fatalf("record at %d past its batch's last offset %d", off, h.LastOffset())
			}
			out = append(out, rec{off: off, kv: kv{key: string(r.Key), value: string(r.Value), tomb: r.Value == nil, noKey: r.Key == nil}})
		}
		if len(recs) != 0 {
			t.Fatalf("batch %d: %d bytes after its records", h.BaseOffset, len(recs))
		}
	}
	for i := 1; i < len(out); i++ {
		if out[i].off <= out[i-1].off {
			t.Fatalf("offsets go from %d to %d", out[i-1].off, out[i].off)
		}
	}
	return out, hdrs
}

// headers2 parses batches read from a log, where cleaned ones are thinned.
func headers2(t testing.TB, b []byte) []batch.Header {
	t.Helper()
	hdrs, err := batch.ValidateLog(b)
	if err != nil {
		t.Fatal(err)
	}
	return hdrs
}

// latest is the view a consumer builds from records: the last value of each
// key, deleted keys gone.
func latest(recs []rec) map[string]string {
	m := make(map[string]string)
	for _, r := range recs {
		if r.tomb {
			delete(m, r.key)
		} else {
			m[r.key] = r.value
		}
	}
	return m
}

func compactConfig() Config {
	cfg := testConfig()
	cfg.CleanupPolicy = "compact"
	cfg.SegmentBytes = 2000
	cfg.MinCleanableDirtyRatio = 0.01
	return cfg
}

func mustClean(t testing.TB, l *Log) CleanResult {
	t.Helper()
	res, err := l.Clean(context.Background())
	if err != nil {
		t.Fatalf("clean: %v", err)
	}
	return res
}

// overwrite appends rounds of batches that each set every one of keys keys.
func overwrite(t testing.TB, l *Log, clock *fakeClock, rounds, keys int, spec func(keyedSpec) keyedSpec) map[int64]kv {
	t.Helper()
	written := make(map[int64]kv)
	for r := range rounds {
		var recs []kv
		for k := range keys {
			recs = append(recs, put(fmt.Sprintf("key-%d", k), fmt.Sprintf("value-%d-%d", k, r)))
		}
		s := keyed(clock.now.UnixMilli(), recs...)
		if spec != nil {
			s = spec(s)
		}
		res := mustAppend(t, l, keyedBatch(t, s), 1)
		for i, kv := range s.recs {
			written[res.BaseOffset+int64(i)] = kv
		}
		clock.advance(time.Second)
	}
	l.SetHighWatermark(l.LogEndOffset())
	return written
}

// checkCleaned checks what cleaning promises against what was written: every
// record read is one written at that offset, below the active segment each
// key appears once, and a consumer's view is unchanged.
func checkCleaned(t testing.TB, l *Log, written map[int64]kv, before map[string]string, once bool) {
	t.Helper()
	recs, _ := decodeLog(t, l)
	l.mu.Lock()
	activeBase := l.active().base
	l.mu.Unlock()
	seen := make(map[string]bool)
	for _, r := range recs {
		if w, ok := written[r.off]; !ok || w != r.kv {
			t.Fatalf("offset %d holds %+v, %+v was written there", r.off, r.kv, w)
		}
		if once && r.off < activeBase {
			if seen[r.key] {
				t.Fatalf("key %q kept twice below the active segment at %d", r.key, activeBase)
			}
			seen[r.key] = true
		}
	}
	got := latest(recs)
	if len(got) != len(before) {
		t.Fatalf("view has %d keys, want %d", len(got), len(before))
	}
	for k, v := range before {
		if got[k] != v {
			t.Fatalf("key %q is %q, want %q", k, got[k], v)
		}
	}
}

func TestCleanKeepsLatestValuePerKey(t *testing.T) {
	codecs := []struct {
		name   string
		codec  int8
		xerial bool
	}{{"none", 0, false}, {"gzip", 1, false}, {"snappy", 2, false}, {"snappy-xerial", 2, true}, {"lz4", 3, false}, {"zstd", 4, false}}
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			clock := newClock()
			cfg := compactConfig()
			cfg.Now = clock.Now
			l, dir := newLog(t, cfg)
			written := overwrite(t, l, clock, 40, 5, func(s keyedSpec) keyedSpec {
				s.codec, s.xerialSnappy = c.codec, c.xerial
				return s
			})
			before, _ := decodeLog(t, l)
			view := latest(before)
			leo, size := l.LogEndOffset(), l.Size()

			res := mustClean(t, l)
			if res.SegmentsCleaned == 0 || res.RecordsRemoved == 0 || res.BytesAfter >= res.BytesBefore {
				t.Fatalf("clean result %+v", res)
			}
			if l.LogEndOffset() != leo || l.LogStartOffset() != 0 {
				t.Fatalf("offsets moved: LEO %d, start %d", l.LogEndOffset(), l.LogStartOffset())
			}
			if l.Size() != size-(res.BytesBefore-res.BytesAfter) {
				t.Fatalf("size %d, want %d", l.Size(), size-(res.BytesBefore-res.BytesAfter))
			}
			checkCleaned(t, l, written, view, true)
			_, hdrs := decodeLog(t, l)
			for _, h := range hdrs {
				if h.Compression() != c.codec {
					t.Fatalf("batch %d has codec %d, want %d", h.BaseOffset, h.Compression(), c.codec)
				}
			}
			// Nothing is dirty now: a second pass has nothing to do.
			if res := mustClean(t, l); res != (CleanResult{}) {
				t.Fatalf("second pass %+v", res)
			}
			if off, ok, err := readOffsetCheckpoint(filepath.Join(dir, cleanerCheckpointFile)); err != nil || !ok || off == 0 {
				t.Fatalf("cleaner checkpoint %d, %v, %v", off, ok, err)
			}

			// The cleaned log opens as it was, trusted or rescanned.
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = openLog(t, dir, cfg)
			checkCleaned(t, l, written, view, true)
			crash(l)
			if err := os.Remove(filepath.Join(dir, recoveryPointFile)); err != nil {
				t.Fatal(err)
			}
			l = openLog(t, dir, cfg)
			defer l.Close()
			checkCleaned(t, l, written, view, true)
			if l.LogEndOffset() != leo {
				t.Fatalf("LEO after recovery %d, want %d", l.LogEndOffset(), leo)
			}
		})
	}
}

func TestCleanTombstonesAfterDeleteRetention(t *testing.T) {
	clock := newClock()
	cfg := compactConfig()
	cfg.Now = clock.Now
	cfg.DeleteRetentionMs = time.Hour.Milliseconds()
	l, dir := newLog(t, cfg)
	written := overwrite(t, l, clock, 10, 4, nil)
	for _, k := range []string{"key-1", "key-2"} {
		res := mustAppend(t, l, keyedBatch(t, keyed(clock.now.UnixMilli(), del(k))), 1)
		written[res.BaseOffset] = del(k)
	}
	for k, v := range overwrite(t, l, clock, 10, 1, nil) {
		written[k] = v
	}
	recs, _ := decodeLog(t, l)
	view := latest(recs)

	mustClean(t, l)
	checkCleaned(t, l, written, view, true)
	tombs := func() int {
		recs, _ := decodeLog(t, l)
		n := 0
		for _, r := range recs {
			if r.tomb {
				n++
			}
		}
		return n
	}
	if n := tombs(); n != 2 {
		t.Fatalf("%d tombstones before delete.retention.ms, want 2", n)
	}

	// Past delete.retention.ms the tombstones go with the next pass, which
	// new writes make due.
	clock.advance(2 * time.Hour)
	for k, v := range overwrite(t, l, clock, 20, 1, nil) {
		written[k] = v
	}
	recs, _ = decodeLog(t, l)
	view = latest(recs)
	mustClean(t, l)
	checkCleaned(t, l, written, view, true)
	if n := tombs(); n != 0 {
		t.Fatalf("%d tombstones after delete.retention.ms", n)
	}
	recs, _ = decodeLog(t, l)
	for _, r := range recs {
		if r.key == "key-1" || r.key == "key-2" {
			t.Fatalf("deleted key %q still at %d", r.key, r.off)
		}
	}
	// The first segment stays, even if emptied, so the log start holds.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, cfg)
	defer l.Close()
	if l.LogStartOffset() != 0 {
		t.Fatalf("log start %d after reopening", l.LogStartOffset())
	}
	checkCleaned(t, l, written, view, true)
}

func TestCleanDirtyRatioAndCompactionLags(t *testing.T) {
	clock := newClock()
	cfg := compactConfig()
	cfg.Now = clock.Now
	cfg.MinCleanableDirtyRatio = 0.5
	l, _ := newLog(t, cfg)

	// Delete policy: never cleaned.
	dcfg := cfg
	dcfg.CleanupPolicy = "delete"
	l.SetConfig(dcfg)
	written := make(map[int64]kv)
	for r := range 30 {
		var recs []kv
		for k := range 5 {
			recs = append(recs, put(fmt.Sprintf("unique-%d-%d", r, k), "v"))
		}
		res := mustAppend(t, l, keyedBatch(t, keyed(clock.now.UnixMilli(), recs...)), 1)
		for i, kv := range recs {
			written[res.BaseOffset+int64(i)] = kv
		}
	}
	l.SetHighWatermark(l.LogEndOffset())
	if res := mustClean(t, l); res != (CleanResult{}) {
		t.Fatalf("delete policy cleaned: %+v", res)
	}
	l.SetConfig(cfg)

	// Above the high watermark nothing is cleanable.
	l.SetHighWatermark(0)
	if res := mustClean(t, l); res != (CleanResult{}) {
		t.Fatalf("cleaned above the high watermark: %+v", res)
	}
	l.SetHighWatermark(l.LogEndOffset())
	if res := mustClean(t, l); res.SegmentsCleaned == 0 || res.RecordsRemoved != 0 {
		t.Fatalf("all-dirty log of unique keys: %+v", res)
	}

	// New data well below half of the inactive bytes is not enough.
	for k, v := range overwrite(t, l, clock, 15, 5, nil) {
		written[k] = v
	}
	if res := mustClean(t, l); res != (CleanResult{}) {
		t.Fatalf("cleaned below min.cleanable.dirty.ratio: %+v", res)
	}
	// max.compaction.lag.ms forces it once the dirty data is that old.
	cfg.MaxCompactionLagMs = time.Minute.Milliseconds()
	l.SetConfig(cfg)
	clock.advance(2 * time.Minute)
	recs, _ := decodeLog(t, l)
	view := latest(recs)
	if res := mustClean(t, l); res.RecordsRemoved == 0 {
		t.Fatalf("max.compaction.lag.ms did not force a pass: %+v", res)
	}
	checkCleaned(t, l, written, view, true)

	// min.compaction.lag.ms holds back segments younger than it.
	cfg.MaxCompactionLagMs = DefaultConfig().MaxCompactionLagMs
	cfg.MinCleanableDirtyRatio = 0
	cfg.MinCompactionLagMs = time.Hour.Milliseconds()
	l.SetConfig(cfg)
	for k, v := range overwrite(t, l, clock, 30, 5, nil) {
		written[k] = v
	}
	if res := mustClean(t, l); res != (CleanResult{}) {
		t.Fatalf("cleaned segments younger than min.compaction.lag.ms: %+v", res)
	}
	clock.advance(2 * time.Hour)
	recs, _ = decodeLog(t, l)
	view = latest(recs)
	if res := mustClean(t, l); res.RecordsRemoved == 0 {
		t.Fatalf("segments past min.compaction.lag.ms not cleaned: %+v", res)
	}
	checkCleaned(t, l, written, view, true)
}

func TestCleanBoundedKeyMap(t *testing.T) {
	clock := newClock()
	cfg := compactConfig()
	cfg.Now = clock.Now
	cfg.CleanerDedupeBufferSize = 7 * cleanerBytesPerKey
	l, dir := newLog(t, cfg)
	written := make(map[int64]kv)
	for r := range 6 {
		for i := range 10 {
			k := fmt.Sprintf("key-%d", i)
			kv := put(k, fmt.Sprintf("v%d", r))
			res := mustAppend(t, l, keyedBatch(t, keyed(clock.now.UnixMilli(), kv)), 1)
			written[res.BaseOffset] = kv
		}
	}
	l.SetHighWatermark(l.LogEndOffset())
	recs, _ := decodeLog(t, l)
	view := latest(recs)
	passes := 0
	for ; passes < 20; passes++ {
		res := mustClean(t, l)
		if res == (CleanResult{}) {
			break
		}
		cp, _, err := readOffsetCheckpoint(filepath.Join(dir, cleanerCheckpointFile))
		if err != nil {
			t.Fatal(err)
		}
		recs, _ := decodeLog(t, l)
		if got := latest(recs); len(got) != len(view) {
			t.Fatalf("pass %d (to %d) changed the view: %v", passes, cp, got)
		}
	}
	if passes < 2 {
		t.Fatalf("a 7-key map cleaned 10 keys in %d passes", passes)
	}
	checkCleaned(t, l, written, view, true)
}

func TestCleanKeepsProducerLastBatch(t *testing.T) {
	clock := newClock()
	cfg := compactConfig()
	cfg.Now = clock.Now
	l, dir := newLog(t, cfg)
	written := make(map[int64]kv)
	add := func(s keyedSpec) {
		res := mustAppend(t, l, keyedBatch(t, s), 1)
		for i, r := range s.recs {
			written[res.BaseOffset+int64(i)] = r
		}
	}
	// Producer 7 writes two batches whose records are all overwritten later.
	p1 := keyed(1000, put("a", "1"), put("b", "1"))
	p1.pid, p1.epoch, p1.seq = 7, 0, 0
	add(p1)
	p2 := p1
	p2.recs, p2.seq = []kv{put("a", "2"), put("b", "2")}, 2
	add(p2)
	for k, v := range overwrite(t, l, clock, 30, 3, func(s keyedSpec) keyedSpec {
		s.recs = append(s.recs, put("a", "x"), put("b", "x"))
		return s
	}) {
		written[k] = v
	}
	recs, _ := decodeLog(t, l)
	view := latest(recs)
	mustClean(t, l)
	checkCleaned(t, l, written, view, true)

	_, hdrs := decodeLog(t, l)
	var kept []batch.Header
	for _, h := range hdrs {
		if h.ProducerID == 7 {
			kept = append(kept, h)
		}
	}
	if len(kept) != 1 || kept[0].BaseOffset != 2 || kept[0].NumRecords != 0 || kept[0].LastOffset() != 3 || kept[0].BaseSequence != 2 {
		t.Fatalf("producer 7 batches after cleaning: %+v", kept)
	}

	// Producer state rebuilt from the log alone still knows the last batch.
	crash(l)
	snaps, err := filepath.Glob(filepath.Join(dir, "*"+snapshotExt))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snaps {
		if err := os.Remove(s); err != nil {
			t.Fatal(err)
		}
	}
	l = openLog(t, dir, cfg)
	defer l.Close()
	dup, err := l.AppendAsLeader(keyedBatch(t, p2), 2)
	if err != nil || !dup.Duplicate || dup.BaseOffset != 2 {
		t.Fatalf("retry of producer 7's last batch: %+v, %v", dup, err)
	}
	p3 := p2
	p3.seq = 4
	if _, err := l.AppendAsLeader(keyedBatch(t, p3), 2); err != nil {
		t.Fatalf("producer 7's next batch: %v", err)
	}
}

func TestCompactedTopicRefusesRecordsWithoutKey(t *testing.T) {
	l, _ := newLog(t, compactConfig())
	for _, codec := range []int8{0, 1, 4} {
		s := keyed(1000, put("k", "v"), kv{value: "v", noKey: true})
		s.codec = codec
		_, err := l.AppendAsLeader(keyedBatch(t, s), 1)
		wantKerr(t, err, kerr.InvalidRecord)
	}
	if l.LogEndOffset() != 0 {
		t.Fatalf("refused batches were written: LEO %d", l.LogEndOffset())
	}
	// An empty key is a key.
	mustAppend(t, l, keyedBatch(t, keyed(1000, put("", "v"))), 1)

	d, _ := newLog(t, testConfig())
	mustAppend(t, d, keyedBatch(t, keyed(1000, kv{value: "v", noKey: true})), 1)
}

func TestCompactPolicyKeepsOldSegments(t *testing.T) {
	clock := newClock()
	cfg := compactConfig()
	cfg.Now = clock.Now
	cfg.RetentionMs = time.Hour.Milliseconds()
	cfg.RetentionBytes = 1
	l, _ := newLog(t, cfg)
	overwrite(t, l, clock, 30, 5, nil)
	clock.advance(2 * time.Hour)
	if n, err := l.EnforceRetention(); err != nil || n != 0 {
		t.Fatalf("retention on a compacted topic deleted %d segments, %v", n, err)
	}
	_, err := l.DeleteRecordsBefore(5)
	wantKerr(t, err, kerr.PolicyViolation)
	// A follower follows its leader's log start whatever the policy.
	if start, err := l.FollowLogStartOffset(2); err != nil || start != 2 {
		t.Fatalf("follower log start: %d, %v", start, err)
	}

	cfg.CleanupPolicy = "compact,delete"
	l.SetConfig(cfg)
	if n, err := l.EnforceRetention(); err != nil || n == 0 {
		t.Fatalf("retention with compact,delete deleted %d segments, %v", n, err)
	}
	if _, err := l.DeleteRecordsBefore(l.HighWatermark()); err != nil {
		t.Fatal(err)
	}
}

// TestCleanWhileReading reads the whole log again and again while batches
// are appended and the log cleaned: every read must hold only records written
// at their offsets, in order, and give the view of everything below the end
// it read to.
func TestCleanWhileReading(t *testing.T) {
	cfg := compactConfig()
	l, _ := newLog(t, cfg)
	now := time.Now().UnixMilli()

	const rounds = 150
	var specs []keyedSpec
	written := make(map[int64]kv)
	next := int64(0)
	for r := range rounds {
		var recs []kv
		for k := range 4 {
			key := fmt.Sprintf("key-%d", (r+k)%9)
			if r%7 == 3 && k == 0 {
				recs = append(recs, del(key))
			} else {
				recs = append(recs, put(key, fmt.Sprintf("%d-%d", r, k)))
			}
		}
		s := keyed(now, recs...)
		s.codec = int8(r % 5)
		specs = append(specs, s)
		for _, kv := range recs {
			written[next] = kv
			next++
		}
	}
	viewAt := func(end int64) map[string]string {
		var recs []rec
		for off := range end {
			recs = append(recs, rec{off: off, kv: written[off]})
		}
		return latest(recs)
	}

	// A region taken before cleaning keeps its bytes.
	for _, s := range specs[:20] {
		mustAppend(t, l, keyedBatch(t, s), 1)
	}
	l.SetHighWatermark(l.LogEndOffset())
	held, err := l.Read(0, 1<<20, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	heldBytes := regionBytes(t, held)

	done := make(chan struct{})
	var wg sync.WaitGroup
	var readErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if readErr = readConsistently(l, written, viewAt); readErr != nil {
				return
			}
		}
	}()
	cleaned := 0
	for _, s := range specs[20:] {
		mustAppend(t, l, keyedBatch(t, s), 1)
		l.SetHighWatermark(l.LogEndOffset())
		res, err := l.Clean(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		cleaned += res.SegmentsCleaned
	}
	close(done)
	wg.Wait()
	if readErr != nil {
		t.Fatal(readErr)
	}
	if cleaned == 0 {
		t.Fatal("nothing was cleaned")
	}
	if !bytes.Equal(regionBytes(t, held), heldBytes) {
		t.Fatal("a region held across cleaning changed")
	}
	held.Release()
	recs, _ := decodeLog(t, l)
	want := viewAt(l.LogEndOffset())
	if got := latest(recs); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("final view %v, want %v", got, want)
	}
}

// readConsistently reads the log from its start to the LEO it sees first,
// as a consumer would, and checks the records against what was written.
func readConsistently(l *Log, written map[int64]kv, viewAt func(int64) map[string]string) error {
	end := l.LogEndOffset()
	var recs []rec
	for off := l.LogStartOffset(); off < end; {
		r, err := l.Read(off, 4096, end, true)
		if err != nil {
			return err
		}
		if r.Len == 0 {
			// While this pass read, the log grew past end and the cleaner
			// may have removed the rest below end: then every record there
			// is a tombstone or its key was written again since.
			if !supersededFrom(written, off, end, l.LogEndOffset()) {
				return fmt.Errorf("empty read at %d below %d, where records must remain", off, end)
			}
			break
		}
		b := make([]byte, r.Len)
		_, err = r.File.ReadAt(b, r.Pos)
		r.Release()
		if err != nil {
			return err
		}
		hdrs, err := batch.ValidateLog(b)
		if err != nil {
			return err
		}
		pos := 0
		for _, h := range hdrs {
			one := b[pos : pos+int(h.Size())]
			pos += int(h.Size())
			if h.LastOffset() < off {
				return fmt.Errorf("read at %d returned batch %d-%d", off, h.BaseOffset, h.LastOffset())
			}
			err := eachRecord(context.Background(), testCodecs, h, one, func(r batch.Record) error {
				o := h.BaseOffset + int64(r.OffsetDelta)
				w := written[o]
				got := kv{key: string(r.Key), value: string(r.Value), tomb: r.Value == nil, noKey: !r.HasKey()}
				if got != w {
					return fmt.Errorf("offset %d holds %+v, %+v was written", o, got, w)
				}
				if o >= off {
					recs = append(recs, rec{off: o, kv: w})
				}
				return nil
			})
			if err != nil {
				return err
			}
			off = h.LastOffset() + 1
		}
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].off <= recs[i-1].off {
			return fmt.Errorf("offsets go from %d to %d", recs[i-1].off, recs[i].off)
		}
	}
	// A key written again at or after end (appended while this pass read)
	// may have lost its records below end to the cleaner; every other key
	// must read exactly as written.
	got, want := latest(recs), viewAt(end)
	rewritten := map[string]bool{}
	for o := end; o < l.LogEndOffset(); o++ {
		rewritten[written[o].key] = true
	}
	for k := range rewritten {
		delete(got, k)
		delete(want, k)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		return fmt.Errorf("view to %d is %v, want %v", end, got, want)
	}
	return nil
}

// supersededFrom reports whether the cleaner may have removed every record
// in [from, end): each is a tombstone or its key was written again below leo.
func supersededFrom(written map[int64]kv, from, end, leo int64) bool {
	for o := from; o < end; o++ {
		w := written[o]
		again := w.tomb
		for o2 := o + 1; o2 < leo && !again; o2++ {
			again = written[o2].key == w.key
		}
		if !again {
			return false
		}
	}
	return true
}

func TestOpenFinishesInterruptedSwap(t *testing.T) {
	clock := newClock()
	cfg := compactConfig()
	cfg.Now = clock.Now
	for _, c := range []struct {
		name     string
		manifest bool
		partial  bool // old segments and index swaps partly done
		cleaned  bool // crash before the commit: only .cleaned files
	}{
		{name: "swap", manifest: true},
		{name: "swap-partly-done", manifest: true, partial: true},
		{name: "swap-without-manifest"},
		{name: "cleaned-only", cleaned: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, dir := newLog(t, cfg)
			written := overwrite(t, l, clock, 40, 5, nil)
			recs, _ := decodeLog(t, l)
			view := latest(recs)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			oldBases := segmentFiles(t, dir)

			// Clean a copy, then plant its segments in the original as a
			// crash would have left them.
			cdir := filepath.Join(t.TempDir(), "topic-0")
			copyDir(t, dir, cdir)
			cl := openLog(t, cdir, cfg)
			if res := mustClean(t, cl); res.SegmentsCleaned < 2 {
				t.Fatalf("clean of the copy: %+v", res)
			}
			cleanedView, _ := decodeLog(t, cl)
			if err := cl.Close(); err != nil {
				t.Fatal(err)
			}
			newBases := segmentFiles(t, cdir)
			active := oldBases[len(oldBases)-1]
			var ranges []swapRange
			for i, b := range newBases[:len(newBases)-1] {
				ranges = append(ranges, swapRange{base: b, end: newBases[i+1]})
				suffix := swapSuffix
				if c.cleaned {
					suffix = cleanedSuffix
				}
				for _, ext := range []string{logExt, indexExt, timeIndexExt} {
					copyFile(t, segmentPath(cdir, b, ext), segmentPath(dir, b, ext)+suffix)
				}
			}
			if newBases[len(newBases)-1] != active {
				t.Fatalf("cleaned copy ends with segment %d, want the active %d", newBases[len(newBases)-1], active)
			}
			if c.manifest {
				if err := os.WriteFile(filepath.Join(dir, swapManifestFile), encodeSwapManifest(ranges), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if c.partial {
				// The first range is done; of the second, its old
				// segments after the first are gone and the index is in.
				r0 := ranges[0]
				for _, b := range oldBases {
					if b >= r0.base && b < r0.end {
						if err := removeSegmentFiles(dir, b); err != nil {
							t.Fatal(err)
						}
					}
				}
				for _, ext := range []string{logExt, indexExt, timeIndexExt} {
					p := segmentPath(dir, r0.base, ext)
					if err := os.Rename(p+swapSuffix, p); err != nil {
						t.Fatal(err)
					}
				}
				if len(ranges) > 1 {
					r1 := ranges[1]
					for _, b := range oldBases {
						if b > r1.base && b < r1.end {
							if err := removeSegmentFiles(dir, b); err != nil {
								t.Fatal(err)
							}
						}
					}
					p := segmentPath(dir, r1.base, indexExt)
					if err := os.Rename(p+swapSuffix, p); err != nil {
						t.Fatal(err)
					}
				}
			}

			l = openLog(t, dir, cfg)
			defer l.Close()
			for _, suffix := range []string{swapSuffix, cleanedSuffix} {
				if left, err := filepath.Glob(filepath.Join(dir, "*"+suffix)); err != nil || len(left) > 0 {
					t.Fatalf("left over: %v, %v", left, err)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, swapManifestFile)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("swap manifest left: %v", err)
			}
			got, _ := decodeLog(t, l)
			switch {
			case c.cleaned:
				if fmt.Sprint(got) != fmt.Sprint(recs) {
					t.Fatal("an uncommitted clean changed the log")
				}
			case c.manifest:
				if fmt.Sprint(got) != fmt.Sprint(cleanedView) {
					t.Fatalf("recovered log differs from the cleaned one:\n%v\n%v", got, cleanedView)
				}
				checkCleaned(t, l, written, view, true)
			default:
				// Without the ranges, old segments past a swap's last
				// batch stay: less clean, still consistent.
				checkCleaned(t, l, written, view, false)
			}
		})
	}
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyDir(t testing.TB, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		copyFile(t, filepath.Join(from, e.Name()), filepath.Join(to, e.Name()))
	}
}

func TestCleanConfigValidate(t *testing.T) {
	for _, p := range []string{"compact", "delete", "compact,delete", "delete, compact"} {
		c := DefaultConfig()
		c.CleanupPolicy = p
		if err := c.Validate(); err != nil {
			t.Errorf("policy %q: %v", p, err)
		}
	}
	c := DefaultConfig()
	c.CleanupPolicy = "compact, delete"
	if !c.Compact() || !c.Delete() {
		t.Error("compact, delete does not mean both")
	}
	bad := []func(*Config){
		func(c *Config) { c.CleanupPolicy = "" },
		func(c *Config) { c.CleanupPolicy = "compact,archive" },
		func(c *Config) { c.DeleteRetentionMs = -1 },
		func(c *Config) { c.MinCleanableDirtyRatio = 1.5 },
		func(c *Config) { c.MinCompactionLagMs = -1 },
		func(c *Config) { c.MaxCompactionLagMs = 0 },
		func(c *Config) { c.MinCompactionLagMs, c.MaxCompactionLagMs = 10, 5 },
		func(c *Config) { c.CleanerDedupeBufferSize = 1 },
	}
	for i, f := range bad {
		c := DefaultConfig()
		f(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("bad config %d accepted", i)
		}
	}
}

func TestFollowerCopiesCleanedLog(t *testing.T) {
	clock := newClock()
	cfg := compactConfig()
	cfg.Now = clock.Now
	leader, _ := newLog(t, cfg)
	written := overwrite(t, leader, clock, 40, 5, func(s keyedSpec) keyedSpec {
		s.codec = 4
		return s
	})
	recs, _ := decodeLog(t, leader)
	view := latest(recs)
	mustClean(t, leader)
	data := readAll(t, leader, 0)

	follower, dir := newLog(t, cfg)
	if _, err := follower.AppendAsFollower(data); err != nil {
		t.Fatalf("follower append of a cleaned log: %v", err)
	}
	if !bytes.Equal(readAll(t, follower, 0), data) || follower.LogEndOffset() != leader.LogEndOffset() {
		t.Fatal("follower log differs from the leader's")
	}
	follower.SetHighWatermark(follower.LogEndOffset())
	checkCleaned(t, follower, written, view, false)
	// Never flushed: Open rescans it all.
	crash(follower)
	follower = openLog(t, dir, cfg)
	defer follower.Close()
	if !bytes.Equal(readAll(t, follower, 0), data) {
		t.Fatal("recovered follower log differs from the leader's")
	}
}

func TestCleanCancelled(t *testing.T) {
	clock := newClock()
	cfg := compactConfig()
	cfg.Now = clock.Now
	l, dir := newLog(t, cfg)
	overwrite(t, l, clock, 40, 5, nil)
	before := readAll(t, l, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Clean(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled clean: %v", err)
	}
	if left, err := filepath.Glob(filepath.Join(dir, "*"+cleanedSuffix)); err != nil || len(left) > 0 {
		t.Fatalf("left over: %v, %v", left, err)
	}
	if !bytes.Equal(readAll(t, l, 0), before) {
		t.Fatal("a cancelled clean changed the log")
	}
	if res := mustClean(t, l); res.RecordsRemoved == 0 {
		t.Fatalf("clean after a cancelled one: %+v", res)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Clean(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("clean of a closed log: %v", err)
	}
}
