package broker_test

import (
	"bytes"
	"context"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/brokertest"
	"github.com/ktoolhq/ktool/internal/batch"
	"github.com/ktoolhq/ktool/plugins/codec"
)

// produceRecords sends one records field to topic/0 with acks=1 and returns the error code.
func produceRecords(t *testing.T, cl *kgo.Client, topic string, records []byte) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

func endOffset(t *testing.T, adm *kadm.Client, topic string) int64 {
	t.Helper()
	offs, err := adm.ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offs.Lookup(topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("end offset of %s: %v", topic, o.Err)
	}
	return o.Offset
}

// lyingBatch is an uncompressed producer batch over section that declares n records.
func lyingBatch(n int32, section []byte) []byte {
	ts := time.Now().UnixMilli()
	return batch.Encode(batch.Header{PartitionLeaderEpoch: -1, LastOffsetDelta: n - 1, FirstTimestamp: ts, MaxTimestamp: ts,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: n}, section)
}

func records(deltas ...int32) []byte {
	var out []byte
	for _, d := range deltas {
		out = batch.AppendRecord(out, 0, d, []byte("k"), []byte("v"), nil)
	}
	return out
}

// zstdBomb is a zstd batch declaring n records whose section inflates to
// 1 GiB: zeros, or n well-formed records of 1 MiB each.
func zstdBomb(t *testing.T, n int32, wellFormed bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for i := range int32(1024) {
		if wellFormed {
			_, err = w.Write(batch.AppendRecord(nil, 0, i, []byte("k"), chunk, nil))
		} else {
			_, err = w.Write(chunk)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ts := time.Now().UnixMilli()
	return batch.Encode(batch.Header{PartitionLeaderEpoch: -1, Attributes: int16(codec.IDZstd), LastOffsetDelta: n - 1,
		FirstTimestamp: ts, MaxTimestamp: ts, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: n}, buf.Bytes())
}

// TestProduceRefusesLyingBatches replays the hostile-input review: batches
// whose records section lies about itself are refused with Kafka's error and
// move no offset, on a topic that keeps the producer's codec and on one that
// forces recompression; a 1 GiB zstd bomb fails fast without the broker
// inflating it.
func TestProduceRefusesLyingBatches(t *testing.T) {
	c := brokertest.NewCluster(t, 1)
	adm := c.Admin()
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "p"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"compression.type": kadm.StringPtr("gzip")}, "f"); err != nil {
		t.Fatal(err)
	}
	cl := c.Client()
	good := lyingBatch(2, records(0, 1))
	cases := []struct {
		name string
		b    []byte
		want *kerr.Error
	}{
		{"2^31-1 declared, one present", lyingBatch(math.MaxInt32, records(0)), kerr.InvalidRecord},
		{"fewer than declared", lyingBatch(3, records(0, 1)), kerr.InvalidRecord},
		{"garbage records", lyingBatch(2, bytes.Repeat([]byte{0xde, 0xad}, 40)), kerr.InvalidRecord},
		{"trailing bytes", lyingBatch(2, append(records(0, 1), 9, 9)), kerr.InvalidRecord},
		{"non-increasing deltas", lyingBatch(3, records(0, 0, 2)), kerr.InvalidRecord},
		{"two batches", append(bytes.Clone(good), good...), kerr.InvalidRecord},
		{"zstd bomb of zeros", zstdBomb(t, 1024, false), kerr.InvalidRecord},
		{"zstd bomb of records", zstdBomb(t, 1024, true), kerr.MessageTooLarge},
	}
	for _, topic := range []string{"p", "f"} {
		for _, tc := range cases {
			t.Run(topic+"/"+tc.name, func(t *testing.T) {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				code := produceRecords(t, cl, topic, bytes.Clone(tc.b))
				runtime.ReadMemStats(&after)
				if code != tc.want.Code {
					t.Fatalf("error code %d (%v), want %v", code, kerr.ErrorForCode(code), tc.want)
				}
				if n := endOffset(t, adm, topic); n != 0 {
					t.Fatalf("a refused batch moved the end offset to %d", n)
				}
				// The whole process (broker and client) allocated far less
				// than the 1 GiB a bomb inflates to.
				if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
					t.Fatalf("%d bytes allocated while refusing one batch", alloc)
				}
			})
		}
		if code := produceRecords(t, cl, topic, bytes.Clone(good)); code != 0 {
			t.Fatalf("%s: a good batch after the lies: error %v", topic, kerr.ErrorForCode(code))
		}
		if n := endOffset(t, adm, topic); n != 2 {
			t.Fatalf("%s: end offset %d after one good batch of 2, want 2", topic, n)
		}
	}
}
