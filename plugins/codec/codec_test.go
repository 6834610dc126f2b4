package codec_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/plugins/codec"
)

func sample(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "record %d with a value that repeats a bit: %s\n", i, strings.Repeat("ab", i%17))
	}
	return b.Bytes()[:n]
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	inputs := [][]byte{{}, []byte("x"), sample(1000), sample(200 << 10)}
	for _, c := range codec.Builtins() {
		t.Run(c.Name(), func(t *testing.T) {
			if got, ok := codec.IDForName(c.Name()); !ok || got != c.ID() {
				t.Fatalf("IDForName(%q) = %d, %v; want %d", c.Name(), got, ok, c.ID())
			}
			comp, err := c.Compress(ctx, inputs)
			if err != nil {
				t.Fatal(err)
			}
			if len(comp) != len(inputs) {
				t.Fatalf("Compress returned %d sections for %d", len(comp), len(inputs))
			}
			if len(comp[3]) >= len(inputs[3]) {
				t.Errorf("compressed %d bytes to %d: no gain", len(inputs[3]), len(comp[3]))
			}
			// Every compressed section must be readable by kgo, as a consumer
			// would. The empty one is left out: no batch has an empty records
			// section, and kgo rejects the header-only xerial stream Java writes for it.
			dec := kgo.DefaultDecompressor()
			for i, b := range comp[1:] {
				i++
				got, err := dec.Decompress(b, kgo.CompressionCodecType(c.ID()))
				if err != nil {
					t.Fatalf("kgo cannot decompress section %d: %v", i, err)
				}
				if !bytes.Equal(got, inputs[i]) {
					t.Fatalf("kgo decompressed section %d to %d bytes, want %d", i, len(got), len(inputs[i]))
				}
			}
			back, err := c.Decompress(ctx, comp)
			if err != nil {
				t.Fatal(err)
			}
			for i := range inputs {
				if !bytes.Equal(back[i], inputs[i]) {
					t.Fatalf("section %d: round trip gave %d bytes, want %d", i, len(back[i]), len(inputs[i]))
				}
			}
		})
	}
}

func TestDecompressGarbage(t *testing.T) {
	for _, c := range codec.Builtins() {
		_, err := c.Decompress(context.Background(), [][]byte{[]byte("this is not compressed data at all")})
		if err == nil {
			t.Errorf("%s: decompressing garbage succeeded", c.Name())
		}
	}
}

func TestCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range codec.Builtins() {
		if _, err := c.Compress(ctx, [][]byte{sample(10)}); err == nil {
			t.Errorf("%s: Compress on a canceled context succeeded", c.Name())
		}
	}
}

func TestSnappyReadsXerialAndRaw(t *testing.T) {
	ctx := context.Background()
	c := codec.NewSnappy()
	in := sample(100 << 10)
	comp, err := c.Compress(ctx, [][]byte{in})
	if err != nil {
		t.Fatal(err)
	}
	x := comp[0]
	header := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}
	if !bytes.HasPrefix(x, header) {
		t.Fatalf("snappy output does not start with the xerial header: % x", x[:16])
	}
	// Java's client writes 32 KiB blocks, each behind a big-endian length.
	blocks := 0
	for pos := 16; pos < len(x); blocks++ {
		n := int(binary.BigEndian.Uint32(x[pos:]))
		block := x[pos+4 : pos+4+n]
		if l, err := s2.DecodedLen(block); err != nil || l > 32<<10 {
			t.Fatalf("block %d decodes to %d bytes (%v), want at most 32 KiB", blocks, l, err)
		}
		pos += 4 + n
	}
	if blocks != 4 {
		t.Errorf("got %d xerial blocks for 100 KiB, want 4", blocks)
	}
	raw := s2.EncodeSnappy(nil, in)
	got, err := c.Decompress(ctx, [][]byte{x, raw})
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range got {
		if !bytes.Equal(g, in) {
			t.Errorf("section %d: decoded %d bytes, want %d", i, len(g), len(in))
		}
	}
}

func TestLZ4FrameIsKafkas(t *testing.T) {
	comp, err := codec.NewLZ4().Compress(context.Background(), [][]byte{sample(1000)})
	if err != nil {
		t.Fatal(err)
	}
	f := comp[0]
	if binary.LittleEndian.Uint32(f) != 0x184D2204 {
		t.Fatalf("not an LZ4 frame: % x", f[:4])
	}
	flg, bd := f[4], f[5]
	if flg>>6 != 1 || flg&0x20 == 0 || flg&0x04 != 0 {
		t.Errorf("FLG %08b: want version 1, independent blocks, no content checksum", flg)
	}
	if bd>>4&7 != 4 {
		t.Errorf("BD %08b: want 64 KiB blocks", bd)
	}
}

// record is what the tests produce and expect back.
type record struct {
	key, value string
	header     string
	ts         time.Time
}

func testRecords(n int) []record {
	base := time.UnixMilli(1_700_000_000_000)
	out := make([]record, n)
	for i := range out {
		out[i] = record{
			key:    fmt.Sprintf("k%d", i),
			value:  string(sample(50 + i*7)),
			header: fmt.Sprintf("h%d", i),
			ts:     base.Add(time.Duration(i) * time.Millisecond),
		}
	}
	return out
}

// produceRaw produces recs with kgo using cc and returns the records field
// kfake stores, which is the batches exactly as kgo sent them.
func produceRaw(t *testing.T, cc kgo.CompressionCodec, recs []record) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	fake, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(fake.ListenAddrs()...), kgo.ProducerBatchCompression(cc),
		kgo.DefaultProduceTopic("t"), kgo.ProducerLinger(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i, r := range recs {
		if i == len(recs)/2 { // two flushes give at least two batches
			if err := cl.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
		cl.Produce(ctx, &kgo.Record{Key: []byte(r.key), Value: []byte(r.value), Timestamp: r.ts,
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(r.header)}}}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Error(err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	return fetchRaw(ctx, t, cl)
}

// topicID asks for topic t's id: kgo sends the newest request versions, which name topics by id.
func topicID(ctx context.Context, t *testing.T, cl *kgo.Client) [16]byte {
	t.Helper()
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("t")
	meta.Topics = append(meta.Topics, mt)
	resp, err := meta.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].TopicID
}

func fetchRaw(ctx context.Context, t *testing.T, cl *kgo.Client) []byte {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.MaxBytes = 64 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "t"
	rt.TopicID = topicID(ctx, t, cl)
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 64 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("fetch error code %d", p.ErrorCode)
	}
	return p.RecordBatches
}

// decodeAll reads every record of a records field through the builtin codecs.
func decodeAll(t *testing.T, field []byte) ([]kmsg.RecordBatch, []record) {
	t.Helper()
	batches, err := codec.SplitBatches(field)
	if err != nil {
		t.Fatal(err)
	}
	lookup := codec.Lookup(codec.Builtins())
	var hs []kmsg.RecordBatch
	var recs []record
	for _, b := range batches {
		if !codec.CRCValid(b) {
			t.Fatal("batch CRC invalid")
		}
		var h kmsg.RecordBatch
		if err := h.ReadFrom(b); err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
		_, section, err := codec.DecompressBatch(context.Background(), b, lookup)
		if err != nil {
			t.Fatal(err)
		}
		raws, err := codec.SplitRecords(section)
		if err != nil {
			t.Fatal(err)
		}
		if len(raws) != int(h.NumRecords) {
			t.Fatalf("batch holds %d records, header says %d", len(raws), h.NumRecords)
		}
		for _, raw := range raws {
			var r kmsg.Record
			if err := r.ReadFrom(raw); err != nil {
				t.Fatal(err)
			}
			if len(r.Headers) != 1 || r.Headers[0].Key != "h" {
				t.Fatalf("record headers %+v", r.Headers)
			}
			recs = append(recs, record{key: string(r.Key), value: string(r.Value), header: string(r.Headers[0].Value),
				ts: time.UnixMilli(h.FirstTimestamp + r.TimestampDelta64)})
		}
	}
	return hs, recs
}

func sameRecords(t *testing.T, got, want []record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].key != want[i].key || got[i].value != want[i].value || got[i].header != want[i].header || !got[i].ts.Equal(want[i].ts) {
			t.Fatalf("record %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

var kgoCodecs = map[int8]kgo.CompressionCodec{
	codec.IDNone: kgo.NoCompression(), codec.IDGzip: kgo.GzipCompression(), codec.IDSnappy: kgo.SnappyCompression(),
	codec.IDLZ4: kgo.Lz4Compression(), codec.IDZstd: kgo.ZstdCompression(),
}

func TestDecodesKgoBatches(t *testing.T) {
	want := testRecords(300)
	for id := codec.IDGzip; id <= codec.IDZstd; id++ {
		t.Run(codec.NameForID(id), func(t *testing.T) {
			field := produceRaw(t, kgoCodecs[id], want)
			hs, got := decodeAll(t, field)
			for _, h := range hs {
				if int8(h.Attributes&7) != id {
					t.Fatalf("kgo wrote codec %d, want %d", h.Attributes&7, id)
				}
			}
			sameRecords(t, got, want)
		})
	}
}

func TestRecompressBatchesKeepsEverything(t *testing.T) {
	ctx := context.Background()
	want := testRecords(200)
	builtins := codec.Builtins()
	lookup := codec.Lookup(builtins)
	targets := append([]codec.Codec{nil}, builtins...)
	for from := codec.IDNone; from <= codec.IDZstd; from++ {
		field := produceRaw(t, kgoCodecs[from], want)
		origField := append([]byte(nil), field...)
		origHs, _ := decodeAll(t, field)
		if len(origHs) < 2 {
			t.Fatalf("kgo wrote %d batches, the test needs several", len(origHs))
		}
		for _, to := range targets {
			toID := codec.IDNone
			if to != nil {
				toID = to.ID()
			}
			t.Run(codec.NameForID(from)+"-to-"+codec.NameForID(toID), func(t *testing.T) {
				var counter codec.Counter
				out, err := codec.RecompressBatches(ctx, field, to, counter.Lookup(lookup))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(field, origField) {
					t.Fatal("RecompressBatches modified its input")
				}
				if from == toID {
					if !bytes.Equal(out, field) {
						t.Fatal("batches already in the target codec were rewritten")
					}
					if counter.Calls() != 0 {
						t.Fatalf("%d codec calls for batches already in the target codec", counter.Calls())
					}
				} else if from != codec.IDNone && counter.Calls() != 1 {
					t.Fatalf("%d decompress calls for %d batches, want one call for all", counter.Calls(), len(origHs))
				}
				hs, got := decodeAll(t, out)
				sameRecords(t, got, want)
				if len(hs) != len(origHs) {
					t.Fatalf("%d batches, want %d", len(hs), len(origHs))
				}
				for i, h := range hs {
					o := origHs[i]
					if int8(h.Attributes&7) != toID || h.Attributes&^7 != o.Attributes&^7 {
						t.Errorf("batch %d attributes %#x, from %#x", i, h.Attributes, o.Attributes)
					}
					if h.FirstOffset != o.FirstOffset || h.LastOffsetDelta != o.LastOffsetDelta ||
						h.FirstTimestamp != o.FirstTimestamp || h.MaxTimestamp != o.MaxTimestamp ||
						h.ProducerID != o.ProducerID || h.ProducerEpoch != o.ProducerEpoch ||
						h.FirstSequence != o.FirstSequence || h.NumRecords != o.NumRecords ||
						h.PartitionLeaderEpoch != o.PartitionLeaderEpoch {
						t.Errorf("batch %d header changed:\n got %+v\nwant %+v", i, h, o)
					}
				}
			})
		}
	}
}

func TestRecompressedBatchesConsumable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	want := testRecords(100)
	field := produceRaw(t, kgo.NoCompression(), want)
	out, err := codec.RecompressBatches(ctx, field, codec.NewZstd(), codec.Lookup(codec.Builtins()))
	if err != nil {
		t.Fatal(err)
	}
	fake, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(fake.ListenAddrs()...), kgo.ConsumeTopics("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	batches, err := codec.SplitBatches(out)
	if err != nil {
		t.Fatal(err)
	}
	id := topicID(ctx, t, cl)
	for _, b := range batches {
		// kfake checks the CRC and assigns offsets, as a broker does.
		req := kmsg.NewPtrProduceRequest()
		req.Acks = -1
		req.TimeoutMillis = 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "t"
		rt.TopicID = id
		rp := kmsg.NewProduceRequestTopicPartition()
		// A produced batch starts at offset 0; the field sits outside the CRC.
		b = append([]byte(nil), b...)
		binary.BigEndian.PutUint64(b, 0)
		rp.Records = b
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if ec := resp.Topics[0].Partitions[0].ErrorCode; ec != 0 {
			t.Fatalf("produce of a recompressed batch failed with error code %d", ec)
		}
	}
	var got []record
	for len(got) < len(want) {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got = append(got, record{key: string(r.Key), value: string(r.Value), header: string(r.Headers[0].Value), ts: r.Timestamp})
		})
	}
	sameRecords(t, got, want)
}

func TestRecompressRejectsCorruptBatch(t *testing.T) {
	field := produceRaw(t, kgo.GzipCompression(), testRecords(5))
	bad := append([]byte(nil), field...)
	bad[len(bad)-1] ^= 0xff
	_, err := codec.RecompressBatches(context.Background(), bad, codec.NewLZ4(), codec.Lookup(codec.Builtins()))
	if err == nil || !strings.Contains(err.Error(), "CRC") {
		t.Fatalf("err = %v, want a CRC mismatch", err)
	}
	_, err = codec.RecompressBatches(context.Background(), field[:len(field)-3], codec.NewLZ4(), codec.Lookup(codec.Builtins()))
	if err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("err = %v, want truncated", err)
	}
}

func TestParseBatchHeaderBadInput(t *testing.T) {
	for _, b := range [][]byte{nil, make([]byte, 10), make([]byte, 61)} {
		if _, err := codec.ParseBatchHeader(b); err == nil {
			t.Errorf("ParseBatchHeader(%d zero bytes) succeeded", len(b))
		}
	}
}

// handBatch builds a magic v2 batch with the given attributes and records section.
func handBatch(base int64, attrs int16, n int32, section []byte) []byte {
	b := (&kmsg.RecordBatch{FirstOffset: base, Magic: 2, Attributes: attrs, LastOffsetDelta: n - 1,
		FirstTimestamp: 1, MaxTimestamp: 2, ProducerID: 9, ProducerEpoch: 1, FirstSequence: -1, NumRecords: n,
		Records: section}).AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func TestRecompressLeavesControlBatches(t *testing.T) {
	ctx := context.Background()
	rec := kmsg.Record{Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 0}}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	control := handBatch(5, 0x30, 1, rec.AppendTo(nil)) // transactional commit marker
	data := kmsg.Record{Key: []byte("k"), Value: []byte("v")}
	data.Length = int32(len(data.AppendTo(nil)) - 1)
	plain := handBatch(6, 0x10, 1, data.AppendTo(nil))
	field := append(append([]byte(nil), control...), plain...)
	out, err := codec.RecompressBatches(ctx, field, codec.NewZstd(), codec.Lookup(codec.Builtins()))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(out, control) {
		t.Fatal("the control batch was rewritten")
	}
	h, err := codec.ParseBatchHeader(out[len(control):])
	if err != nil {
		t.Fatal(err)
	}
	if h.CodecID() != codec.IDZstd || !h.Transactional() || h.BaseOffset != 6 || !codec.CRCValid(out[len(control):]) {
		t.Fatalf("data batch after recompression: %+v", h)
	}
}
