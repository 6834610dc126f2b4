package e2e

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/internal/batch"
)

// shapes are records covering every field a record can carry: present, null and
// empty keys and values, headers (repeated keys, null and empty header values),
// explicit timestamps out of order, and values big enough that codecs matter.
func shapes() []*kgo.Record {
	base := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 64<<10)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	text := bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog "), 2000)
	return []*kgo.Record{
		{Key: []byte("k1"), Value: []byte("v1"), Timestamp: base},
		{Key: nil, Value: []byte("null key"), Timestamp: base.Add(time.Millisecond)},
		{Key: []byte("tombstone"), Value: nil, Timestamp: base.Add(2 * time.Millisecond)},
		{Key: []byte("empty value"), Value: []byte{}, Timestamp: base.Add(3 * time.Millisecond)},
		{Key: []byte{}, Value: []byte("empty key"), Timestamp: base.Add(4 * time.Millisecond)},
		{Key: nil, Value: nil, Timestamp: base.Add(5 * time.Millisecond)},
		{Key: []byte("headers"), Value: []byte("h"), Timestamp: base.Add(6 * time.Millisecond), Headers: []kgo.RecordHeader{
			{Key: "a", Value: []byte("1")},
			{Key: "a", Value: []byte("2")},
			{Key: "null", Value: nil},
			{Key: "empty", Value: []byte{}},
			{Key: "", Value: []byte("empty key")},
		}},
		{Key: []byte("older timestamp"), Value: []byte("t"), Timestamp: base.Add(-time.Hour)},
		{Key: []byte("compressible"), Value: text, Timestamp: base.Add(7 * time.Millisecond)},
		{Key: []byte("random"), Value: random, Timestamp: base.Add(8 * time.Millisecond)},
		{Key: []byte("binary key \x00\xff"), Value: []byte("\x00\x01\x02"), Timestamp: base.Add(9 * time.Millisecond)},
	}
}

// codecs pairs each kgo codec with the compression bits of a batch's attributes.
var codecs = []struct {
	name  string
	codec kgo.CompressionCodec
	attr  int16
}{
	{"none", kgo.NoCompression(), 0},
	{"gzip", kgo.GzipCompression(), 1},
	{"snappy", kgo.SnappyCompression(), 2},
	{"lz4", kgo.Lz4Compression(), 3},
	{"zstd", kgo.ZstdCompression(), 4},
}

func TestRoundTripRecordShapesEveryCodec(t *testing.T) {
	b := startBroker(t)
	adm := b.Admin(t)
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := "shapes-" + c.name
			createTopic(t, adm, topic, 1, nil)
			want := shapes()
			// One linger window so all records travel in one batch and the codec
			// sees them together.
			prod := b.Client(t, kgo.ProducerBatchCompression(c.codec), kgo.ProducerLinger(50*time.Millisecond),
				kgo.ProducerBatchMaxBytes(4<<20), kgo.DefaultProduceTopic(topic))
			ctx := testCtx(t, 30*time.Second)
			if err := prod.ProduceSync(ctx, want...).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			got := consumeRange(t, b, topic, 0, 0, len(want), kgo.FetchMaxBytes(16<<20), kgo.FetchMaxPartitionBytes(16<<20))
			for i := range want {
				if err := sameRecord(want[i], got[i]); err != nil {
					t.Errorf("record %d: %v", i, err)
				}
				if got[i].Offset != int64(i) {
					t.Errorf("record %d has offset %d", i, got[i].Offset)
				}
			}
			// The broker keeps the producer's batches as sent (compression.type=producer).
			if attr, err := firstBatchAttributes(filepath.Join(b.Dir(), topic+"-0", fmt.Sprintf("%020d.log", 0))); err != nil {
				t.Error(err)
			} else if attr&7 != c.attr {
				t.Errorf("first batch on disk has codec bits %d, want %d", attr&7, c.attr)
			}
		})
	}
}

// sameRecord compares everything a consumer sees of a record, telling nil from empty.
func sameRecord(want, got *kgo.Record) error {
	if (want.Key == nil) != (got.Key == nil) || !bytes.Equal(want.Key, got.Key) {
		return fmt.Errorf("key %s, want %s", show(got.Key), show(want.Key))
	}
	if (want.Value == nil) != (got.Value == nil) || !bytes.Equal(want.Value, got.Value) {
		return fmt.Errorf("value %s, want %s", show(got.Value), show(want.Value))
	}
	if !got.Timestamp.Equal(want.Timestamp) {
		return fmt.Errorf("timestamp %v, want %v", got.Timestamp, want.Timestamp)
	}
	if len(got.Headers) != len(want.Headers) {
		return fmt.Errorf("%d headers, want %d", len(got.Headers), len(want.Headers))
	}
	for i, h := range want.Headers {
		g := got.Headers[i]
		if g.Key != h.Key || (g.Value == nil) != (h.Value == nil) || !bytes.Equal(g.Value, h.Value) {
			return fmt.Errorf("header %d is %q=%s, want %q=%s", i, g.Key, show(g.Value), h.Key, show(h.Value))
		}
	}
	return nil
}

func show(b []byte) string {
	switch {
	case b == nil:
		return "null"
	case len(b) > 32:
		return fmt.Sprintf("%d bytes %q...", len(b), b[:32])
	}
	return fmt.Sprintf("%q", b)
}

// firstBatchAttributes reads the attributes of the first batch in a segment file:
// baseOffset(8) length(4) partitionLeaderEpoch(4) magic(1) crc(4) attributes(2).
func firstBatchAttributes(path string) (int16, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var hdr [23]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return 0, fmt.Errorf("reading the first batch header of %s: %w", path, err)
	}
	if hdr[16] != 2 {
		return 0, fmt.Errorf("%s: first batch has magic %d", path, hdr[16])
	}
	return int16(binary.BigEndian.Uint16(hdr[batch.OffAttributes:])), nil
}
