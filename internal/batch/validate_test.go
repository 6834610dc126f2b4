package batch_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/internal/batch"
	"github.com/ktoolhq/ktool/plugins/codec"
)

const now = 1_700_000_000_000

// spec describes a producer batch; zero values give n keyed records with
// offset deltas 0..n-1 and timestamps now+i.
type spec struct {
	n        int
	codec    int8
	declared int32   // recordsCount when not n
	deltas   []int32 // offset deltas when not 0..n-1
	tsDelta  []int64 // timestamp deltas when not 0..n-1
	noKey    bool
	trailing []byte // bytes after the records, inside the section
	section  []byte // the section itself, when given
	maxTs    int64  // maxTimestamp when not the records' largest
	value    int    // value size
}

func section(s spec) []byte {
	if s.section != nil {
		return s.section
	}
	var out []byte
	for i := range s.n {
		d := int32(i)
		if s.deltas != nil {
			d = s.deltas[i]
		}
		ts := int64(i)
		if s.tsDelta != nil {
			ts = s.tsDelta[i]
		}
		key := fmt.Appendf(nil, "k%d", i)
		if s.noKey {
			key = nil
		}
		out = batch.AppendRecord(out, ts, d, key, bytes.Repeat([]byte{'v'}, max(s.value, 1)),
			[]batch.RecordHeader{{Key: "h", Value: []byte("x")}})
	}
	return append(out, s.trailing...)
}

func build(t testing.TB, s spec) []byte {
	t.Helper()
	sec := section(s)
	if s.codec != codec.IDNone {
		c, err := builtins.CodecByID(context.Background(), s.codec)
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.Compress(context.Background(), [][]byte{sec})
		if err != nil {
			t.Fatal(err)
		}
		sec = out[0]
	}
	n := int32(s.n)
	if s.declared != 0 {
		n = s.declared
	}
	maxTs := now + int64(s.n-1)
	if s.maxTs != 0 {
		maxTs = s.maxTs
	}
	return batch.Encode(batch.Header{
		PartitionLeaderEpoch: -1, Attributes: int16(s.codec), LastOffsetDelta: n - 1,
		FirstTimestamp: now, MaxTimestamp: maxTs, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: n,
	}, sec)
}

func rules() batch.Rules {
	return batch.Rules{Codecs: builtins, MaxMessageBytes: 1 << 20, CreateTime: true, TimestampDiffMaxMs: math.MaxInt64, Now: now}
}

var allCodecs = []int8{codec.IDNone, codec.IDGzip, codec.IDSnappy, codec.IDLZ4, codec.IDZstd}

func TestCheckProduceAcceptsGoodBatches(t *testing.T) {
	for _, id := range allCodecs {
		t.Run(codec.NameForID(id), func(t *testing.T) {
			b := build(t, spec{n: 50, codec: id})
			orig := bytes.Clone(b)
			h, err := batch.CheckProduce(context.Background(), b, rules())
			if err != nil {
				t.Fatal(err)
			}
			if h.NumRecords != 50 || h.Compression() != id || !bytes.Equal(b, orig) {
				t.Fatalf("header %+v; batch changed: %v", h, !bytes.Equal(b, orig))
			}
		})
	}
}

// TestCheckProduceUncompressedAllocatesNothing: the hot path reads the
// records where they lie, into one Record and one header on its stack.
func TestCheckProduceUncompressedAllocatesNothing(t *testing.T) {
	b := build(t, spec{n: 100})
	r := rules()
	r.RequireKeys = true
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := batch.CheckProduce(context.Background(), b, r); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0 {
		t.Fatalf("%v allocations per check of an uncompressed batch", allocs)
	}
}

// TestCheckProduceRefusesLies holds every lie the hostile-input review
// found (and its neighbours) to the error Kafka's LogValidator gives, for
// uncompressed and compressed batches alike.
func TestCheckProduceRefusesLies(t *testing.T) {
	garbage := bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 50)
	cases := []struct {
		name string
		s    spec
		want *kerr.Error
	}{
		{"2^31-1 declared, one present", spec{n: 1, declared: math.MaxInt32}, kerr.InvalidRecord},
		{"fewer than declared", spec{n: 2, declared: 3}, kerr.InvalidRecord},
		{"more than declared", spec{n: 4, declared: 3}, kerr.InvalidRecord},
		{"garbage records", spec{n: 3, section: garbage}, kerr.InvalidRecord},
		{"trailing bytes", spec{n: 3, trailing: []byte{1, 2, 3}}, kerr.InvalidRecord},
		{"repeated delta", spec{n: 3, deltas: []int32{0, 0, 1}}, kerr.InvalidRecord},
		{"falling delta", spec{n: 3, deltas: []int32{0, 2, 1}}, kerr.InvalidRecord},
		{"delta past the last", spec{n: 3, deltas: []int32{0, 1, 3}}, kerr.InvalidRecord},
		{"length past the section", spec{n: 1, section: []byte{0x7e, 0, 0, 0, 0, 0, 0}}, kerr.InvalidRecord},
		{"length below a record", spec{n: 1, section: []byte{0x02, 0, 0}}, kerr.InvalidRecord},
		{"key past the record", spec{n: 1, section: []byte{0x0c, 0, 0, 0, 0x7e, 0, 0}}, kerr.InvalidRecord},
		{"header count lies", spec{n: 1, section: []byte{0x0c, 0, 0, 0, 0x01, 0x01, 0x7e}}, kerr.InvalidRecord},
		{"bytes after the headers", spec{n: 1, section: []byte{0x0e, 0, 0, 0, 0x01, 0x01, 0x00, 0x00}}, kerr.InvalidRecord},
		{"empty section", spec{n: 1, section: []byte{}}, kerr.InvalidRecord},
	}
	for _, id := range allCodecs {
		for _, tc := range cases {
			t.Run(codec.NameForID(id)+"/"+tc.name, func(t *testing.T) {
				tc.s.codec = id
				_, err := batch.CheckProduce(context.Background(), build(t, tc.s), rules())
				if !errors.Is(err, tc.want) {
					t.Fatalf("err = %v, want %v", err, tc.want)
				}
			})
		}
	}
}

func TestCheckProduceBatchRules(t *testing.T) {
	good := build(t, spec{n: 2})
	control := batch.EncodeMarker(7, 0, batch.Marker{Type: batch.ControlCommit, CoordinatorEpoch: 3}, now)
	noKeys := build(t, spec{n: 2, noKey: true})
	compacted := rules()
	compacted.RequireKeys = true
	for _, tc := range []struct {
		name string
		b    []byte
		r    batch.Rules
		want *kerr.Error
	}{
		{"two batches", append(bytes.Clone(good), good...), rules(), kerr.InvalidRecord},
		{"control batch", control, rules(), kerr.InvalidRecord},
		{"no key on a compacted topic", noKeys, compacted, kerr.InvalidRecord},
		{"too large", build(t, spec{n: 3, value: 2000}), batch.Rules{Codecs: builtins, MaxMessageBytes: 1000}, kerr.MessageTooLarge},
		{"nothing", nil, rules(), kerr.InvalidRecord},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := batch.CheckProduce(context.Background(), tc.b, tc.r); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := batch.CheckProduce(context.Background(), noKeys, rules()); err != nil {
		t.Fatalf("keyless records on a topic that is not compacted: %v", err)
	}
}

// TestCheckProduceTimestamps: every record's timestamp is held to
// message.timestamp.difference.max.ms, not only the header's, and a
// maxTimestamp that disagrees with the records is corrected in place.
func TestCheckProduceTimestamps(t *testing.T) {
	r := rules()
	r.TimestampDiffMaxMs = 1000
	for _, id := range allCodecs {
		t.Run(codec.NameForID(id), func(t *testing.T) {
			late := build(t, spec{n: 3, codec: id, tsDelta: []int64{0, 5000, 1}, maxTs: now + 1})
			if _, err := batch.CheckProduce(context.Background(), late, r); !errors.Is(err, kerr.InvalidTimestamp) {
				t.Fatalf("err = %v, want INVALID_TIMESTAMP", err)
			}
			lax := r
			lax.CreateTime = false
			if _, err := batch.CheckProduce(context.Background(), late, lax); err != nil {
				t.Fatalf("LogAppendTime topic: %v", err)
			}
			lying := build(t, spec{n: 3, codec: id, tsDelta: []int64{0, 700, 1}, maxTs: now + 1})
			h, err := batch.CheckProduce(context.Background(), lying, r)
			if err != nil {
				t.Fatal(err)
			}
			back, err := batch.ParseHeader(lying)
			if err != nil || h.MaxTimestamp != now+700 || back.MaxTimestamp != now+700 || !batch.CRCValid(lying) {
				t.Fatalf("maxTimestamp %d in the result, %d in place (crc ok %v), want %d", h.MaxTimestamp, back.MaxTimestamp, batch.CRCValid(lying), now+700)
			}
		})
	}
}

// zstdBatch is a batch whose zstd section inflates to n bytes written by
// fill, streaming, so the test never holds them.
// A batch whose records compress better than the ratio allows is refused at
// the default message.decompression.max.ratio and accepted with a larger one.
func TestDecompressRatio(t *testing.T) {
	value := make([]byte, 64<<10)
	b := zstdBatch(t, 640, func(w io.Writer) error {
		for i := range 640 { // 40 MiB of records: 40 times a 1 MiB max.message.bytes
			if _, err := w.Write(batch.AppendRecord(nil, 0, int32(i), nil, value, nil)); err != nil {
				return err
			}
		}
		return nil
	})
	r := rules()
	if _, err := batch.CheckProduce(context.Background(), bytes.Clone(b), r); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("at the default ratio: %v, want MESSAGE_TOO_LARGE", err)
	}
	r.DecompressRatio = 64
	if _, err := batch.CheckProduce(context.Background(), bytes.Clone(b), r); err != nil {
		t.Fatalf("at ratio 64: %v", err)
	}
	if got := batch.DecompressLimit(1<<20, 0); got != 32<<20 {
		t.Errorf("default limit %d", got)
	}
	if got := batch.DecompressLimit(1<<30, 64); got != codec.MaxDecompressed {
		t.Errorf("limit past 1 GiB: %d", got)
	}
}

func zstdBatch(t testing.TB, declared int32, fill func(w io.Writer) error) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		t.Fatal(err)
	}
	if err := fill(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return batch.Encode(batch.Header{
		PartitionLeaderEpoch: -1, Attributes: int16(codec.IDZstd), LastOffsetDelta: declared - 1,
		FirstTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: declared,
	}, buf.Bytes())
}

// TestCompressionBombs: a zstd batch that inflates to 1 GiB fails fast with
// bounded memory, whether its records are garbage (zeros: the first record
// is already wrong) or well-formed (1 MiB records: the limit stops it),
// through validation and through recompression.
func TestCompressionBombs(t *testing.T) {
	zeros := zstdBatch(t, 1024, func(w io.Writer) error {
		z := make([]byte, 1<<20)
		for range 1024 {
			if _, err := w.Write(z); err != nil {
				return err
			}
		}
		return nil
	})
	records := zstdBatch(t, 1024, func(w io.Writer) error {
		value := make([]byte, 1<<20)
		for i := range 1024 {
			if _, err := w.Write(batch.AppendRecord(nil, 0, int32(i), []byte("k"), value, nil)); err != nil {
				return err
			}
		}
		return nil
	})
	t.Logf("bombs of %d and %d bytes, each inflating to 1 GiB", len(zeros), len(records))
	r := rules() // max.message.bytes 1 MiB: at most 32 MiB decompressed
	limit := uint64(batch.DecompressLimit(r.MaxMessageBytes, r.DecompressRatio))
	for _, tc := range []struct {
		name string
		b    []byte
		want *kerr.Error
		// memory: what the check may allocate at most
		memory uint64
	}{
		{"garbage records", zeros, kerr.InvalidRecord, 8 << 20},
		{"well-formed records", records, kerr.MessageTooLarge, 8 << 20},
	} {
		t.Run(tc.name+"/validate", func(t *testing.T) {
			alloc := allocated(func() {
				if _, err := batch.CheckProduce(context.Background(), bytes.Clone(tc.b), r); !errors.Is(err, tc.want) {
					t.Fatalf("err = %v, want %v", err, tc.want)
				}
			})
			if alloc > tc.memory+uint64(len(tc.b)) {
				t.Fatalf("allocated %d bytes", alloc)
			}
		})
		t.Run(tc.name+"/recompress", func(t *testing.T) {
			alloc := allocated(func() {
				_, err := batch.Recompress(context.Background(), builtins, tc.b, codec.IDGzip, int(limit))
				if !errors.Is(err, kerr.MessageTooLarge) {
					t.Fatalf("err = %v, want MESSAGE_TOO_LARGE", err)
				}
			})
			if alloc > 4*limit {
				t.Fatalf("allocated %d bytes at a %d-byte limit", alloc, limit)
			}
		})
	}
}

func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestControlMarkers(t *testing.T) {
	for _, m := range []batch.Marker{{Type: batch.ControlCommit, CoordinatorEpoch: 7}, {Type: batch.ControlAbort, CoordinatorEpoch: -1}} {
		b := batch.EncodeMarker(42, 3, m, now)
		hdrs, err := batch.ValidateLog(b)
		if err != nil {
			t.Fatal(err)
		}
		h := hdrs[0]
		if !h.Control() || !h.Transactional() || h.Compression() != 0 || h.ProducerID != 42 || h.ProducerEpoch != 3 || h.NumRecords != 1 {
			t.Fatalf("marker header %+v", h)
		}
		var got []batch.Marker
		err = batch.EachRecord(h, b[batch.HeaderSize:], func(r batch.Record) error {
			mk, err := batch.ParseMarker(r)
			got = append(got, mk)
			return err
		})
		if err != nil || len(got) != 1 || got[0] != m {
			t.Fatalf("markers back %+v, %v; want %+v", got, err, m)
		}
		if mk, err := batch.MarkerOf(b); err != nil || mk != m {
			t.Fatalf("MarkerOf = %+v, %v; want %+v", mk, err, m)
		}
		if _, err := batch.MarkerOf(b[:len(b)-1]); err == nil {
			t.Fatal("MarkerOf accepted a truncated batch")
		}
	}
	if _, err := batch.ControlKey([]byte{0, 1, 0, 1}); err == nil {
		t.Fatal("control key version 1 accepted")
	}
}
