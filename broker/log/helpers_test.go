package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/batch"
	"github.com/ktoolhq/ktool/plugins/codec"
)

// batchSpec describes a test batch; zero values give a plain, non-idempotent
// batch of n records with timestamps ts, ts+1, ...
type batchSpec struct {
	n       int
	ts      int64
	pid     int64
	epoch   int16
	seq     int32
	gzip    bool
	valueSz int
	txn     bool // transactional
}

func txnBatch(pid int64, epoch int16, seq int32, n int) batchSpec {
	s := idem(pid, epoch, seq, n)
	s.txn = true
	return s
}

func plain(n int, ts int64) batchSpec { return batchSpec{n: n, ts: ts, pid: -1, epoch: -1, seq: -1} }

func idem(pid int64, epoch int16, seq int32, n int) batchSpec {
	return batchSpec{n: n, ts: 1000, pid: pid, epoch: epoch, seq: seq}
}

func appendTestRecord(dst []byte, i int, tsDelta int64, value []byte) []byte {
	body := []byte{0}
	body = binary.AppendVarint(body, tsDelta)
	body = binary.AppendVarint(body, int64(i))
	key := fmt.Appendf(nil, "k%d", i)
	body = binary.AppendVarint(body, int64(len(key)))
	body = append(body, key...)
	body = binary.AppendVarint(body, int64(len(value)))
	body = append(body, value...)
	body = binary.AppendVarint(body, 0)
	dst = binary.AppendVarint(dst, int64(len(body)))
	return append(dst, body...)
}

// makeBatch encodes a magic-v2 batch with kmsg.RecordBatch and a real CRC32C.
func makeBatch(t testing.TB, s batchSpec) []byte {
	t.Helper()
	var recs []byte
	for i := range s.n {
		v := bytes.Repeat([]byte{byte('a' + i%26)}, max(s.valueSz, 1))
		recs = appendTestRecord(recs, i, int64(i), v)
	}
	attrs := int16(0)
	if s.gzip {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		if _, err := w.Write(recs); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		recs = buf.Bytes()
		attrs = 1
	}
	if s.txn {
		attrs |= batch.AttrTransactional
	}
	b := kmsg.RecordBatch{
		Length:          int32(batch.MinLength + len(recs)),
		Magic:           2,
		Attributes:      attrs,
		LastOffsetDelta: int32(s.n - 1),
		FirstTimestamp:  s.ts,
		MaxTimestamp:    s.ts + int64(s.n-1),
		ProducerID:      s.pid,
		ProducerEpoch:   s.epoch,
		FirstSequence:   s.seq,
		NumRecords:      int32(s.n),
		Records:         recs,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[batch.OffCRC:], batch.Checksum(out))
	return out
}

func testConfig() Config {
	c := DefaultConfig()
	c.IndexIntervalBytes = 256
	c.Codecs = testCodecs
	return c
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// testCodecs are the built-in codecs, as the broker resolves them without plugins.
var testCodecs = codec.NewSet(codec.Builtins()...)

func openLog(t testing.TB, dir string, cfg Config) *Log {
	t.Helper()
	if cfg.Codecs == nil {
		cfg.Codecs = testCodecs
	}
	l, err := Open(dir, cfg, testLogger(t))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return l
}

func newLog(t testing.TB, cfg Config) (*Log, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "topic-0")
	l := openLog(t, dir, cfg)
	t.Cleanup(func() {
		if err := l.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("close: %v", err)
		}
	})
	return l, dir
}

// crash drops the log's files without flushing, checkpointing or marking a
// clean shutdown, as a killed process would.
func crash(l *Log) {
	l.closeFiles()
}

func mustAppend(t testing.TB, l *Log, batch []byte, epoch int32) AppendResult {
	t.Helper()
	res, err := l.AppendAsLeader(batch, epoch)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	return res
}

func regionBytes(t testing.TB, r Region) []byte {
	t.Helper()
	b := make([]byte, r.Len)
	if _, err := r.File.ReadAt(b, r.Pos); err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("read region: %v", err)
	}
	return b
}

// readAll reads every batch from offset to the LEO, looping over segments.
func readAll(t testing.TB, l *Log, from int64) []byte {
	t.Helper()
	var out []byte
	for off := from; off < l.LogEndOffset(); {
		r, err := l.Read(off, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if r.Len == 0 {
			t.Fatalf("empty read at %d below LEO %d", off, l.LogEndOffset())
		}
		b := regionBytes(t, r)
		r.Release()
		hdrs, err := batch.ValidateLog(b)
		if err != nil {
			t.Fatalf("region at %d: %v", off, err)
		}
		out = append(out, b...)
		off = hdrs[len(hdrs)-1].LastOffset() + 1
	}
	return out
}

func headers(t testing.TB, b []byte) []batch.Header {
	t.Helper()
	hdrs, err := batch.ValidateLog(b)
	if err != nil {
		t.Fatal(err)
	}
	return hdrs
}

func wantKerr(t testing.TB, err error, want *kerr.Error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want %v", err, want)
	}
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// fakeClock is a settable clock for Config.Now.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time          { return c.now }
func (c *fakeClock) advance(d time.Duration) { c.now = c.now.Add(d) }
func newClock() *fakeClock                   { return &fakeClock{now: time.UnixMilli(1_700_000_000_000)} }
