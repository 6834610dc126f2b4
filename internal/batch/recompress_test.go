package batch_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/batch"
	"github.com/ktoolhq/ktool/plugins/codec"
)

var builtins = codec.NewSet(codec.Builtins()...)

func sample(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "record %d with a value that repeats a bit: %s\n", i, strings.Repeat("ab", i%17))
	}
	return b.Bytes()[:n]
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
	batches, err := batch.Split(field)
	if err != nil {
		t.Fatal(err)
	}
	var hs []kmsg.RecordBatch
	var recs []record
	for _, b := range batches {
		if !batch.CRCValid(b) {
			t.Fatal("batch CRC invalid")
		}
		var kh kmsg.RecordBatch
		if err := kh.ReadFrom(b); err != nil {
			t.Fatal(err)
		}
		hs = append(hs, kh)
		h, err := batch.ParseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		err = batch.Records(context.Background(), builtins, h, b, 0, func(r batch.Record) error {
			hdrs := r.Headers()
			if len(hdrs) != 1 || hdrs[0].Key != "h" {
				return fmt.Errorf("record headers %+v", hdrs)
			}
			recs = append(recs, record{key: string(r.Key), value: string(r.Value), header: string(hdrs[0].Value),
				ts: time.UnixMilli(h.FirstTimestamp + r.TimestampDelta)})
			return nil
		})
		if err != nil {
			t.Fatal(err)
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

func TestRecompressKeepsEverything(t *testing.T) {
	ctx := context.Background()
	want := testRecords(200)
	for from := codec.IDNone; from <= codec.IDZstd; from++ {
		field := produceRaw(t, kgoCodecs[from], want)
		origField := append([]byte(nil), field...)
		origHs, _ := decodeAll(t, field)
		if len(origHs) < 2 {
			t.Fatalf("kgo wrote %d batches, the test needs several", len(origHs))
		}
		for toID := codec.IDNone; toID <= codec.IDZstd; toID++ {
			t.Run(codec.NameForID(from)+"-to-"+codec.NameForID(toID), func(t *testing.T) {
				var counter codec.Counter
				out, err := batch.Recompress(ctx, counter.Codecs(builtins), field, toID, 0)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(field, origField) {
					t.Fatal("Recompress modified its input")
				}
				if from == toID {
					if !bytes.Equal(out, field) {
						t.Fatal("batches already in the target codec were rewritten")
					}
					if n := counter.Compressions() + counter.Decompressions(); n != 0 {
						t.Fatalf("%d codec calls for batches already in the target codec", n)
					}
				} else if from != codec.IDNone && counter.Decompressions() != 1 {
					t.Fatalf("%d decompress calls for %d batches, want one call for all", counter.Decompressions(), len(origHs))
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
	out, err := batch.Recompress(ctx, builtins, field, codec.IDZstd, 0)
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
	batches, err := batch.Split(out)
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
		batch.SetBaseOffset(b, 0)
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
	_, err := batch.Recompress(context.Background(), builtins, bad, codec.IDLZ4, 0)
	if err == nil || !strings.Contains(err.Error(), "CRC") {
		t.Fatalf("err = %v, want a CRC mismatch", err)
	}
	_, err = batch.Recompress(context.Background(), builtins, field[:len(field)-3], codec.IDLZ4, 0)
	if !errors.Is(err, kerr.CorruptMessage) {
		t.Fatalf("err = %v, want CORRUPT_MESSAGE for a torn batch", err)
	}
}

func TestParseHeaderBadInput(t *testing.T) {
	for _, b := range [][]byte{nil, make([]byte, 10), make([]byte, 61)} {
		if _, err := batch.ParseHeader(b); !errors.Is(err, kerr.CorruptMessage) {
			t.Errorf("ParseHeader(%d zero bytes): %v, want CORRUPT_MESSAGE", len(b), err)
		}
	}
}

// handBatch builds a magic v2 batch with the given attributes and records section.
func handBatch(base int64, attrs int16, n int32, section []byte) []byte {
	return batch.Encode(batch.Header{BaseOffset: base, Attributes: attrs, LastOffsetDelta: n - 1,
		FirstTimestamp: 1, MaxTimestamp: 2, ProducerID: 9, ProducerEpoch: 1, BaseSequence: -1, NumRecords: n}, section)
}

func TestRecompressLeavesControlBatches(t *testing.T) {
	ctx := context.Background()
	control := batch.EncodeMarker(9, 1, batch.Marker{Type: batch.ControlCommit}, 1)
	batch.SetBaseOffset(control, 5)
	plain := handBatch(6, batch.AttrTransactional, 1, batch.AppendRecord(nil, 0, 0, []byte("k"), []byte("v"), nil))
	field := append(append([]byte(nil), control...), plain...)
	out, err := batch.Recompress(ctx, builtins, field, codec.IDZstd, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(out, control) {
		t.Fatal("the control batch was rewritten")
	}
	h, err := batch.ParseHeader(out[len(control):])
	if err != nil {
		t.Fatal(err)
	}
	if h.Compression() != codec.IDZstd || !h.Transactional() || h.BaseOffset != 6 || !batch.CRCValid(out[len(control):]) {
		t.Fatalf("data batch after recompression: %+v", h)
	}
}
