package hostile

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/batch"
	"github.com/ktoolhq/ktool/plugins/codec"
)

// rawBatch encodes a v2 batch of section (records, compressed with the codec
// of attributes) that declares numRecords records, with a valid CRC: the
// header is consistent, only what it says of the records may lie.
func rawBatch(attributes int16, numRecords int32, section []byte) []byte {
	now := time.Now().UnixMilli()
	return batch.Encode(batch.Header{
		PartitionLeaderEpoch: -1, Attributes: attributes, LastOffsetDelta: numRecords - 1,
		FirstTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		NumRecords: numRecords,
	}, section)
}

// zstdBomb is a zstd batch of a few hundred KiB whose records inflate to
// 1 GiB: 1,024 well-formed records of 1 MiB each.
func zstdBomb(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		t.Fatal(err)
	}
	value := make([]byte, 1<<20)
	for i := range 1024 {
		if _, err := w.Write(batch.AppendRecord(nil, 0, int32(i), []byte("k"), value, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return rawBatch(int16(codec.IDZstd), 1024, buf.Bytes())
}

// produceRaw sends one batch to partition 0 of topic (acks=1) and returns the
// partition's error.
func produceRaw(t *testing.T, b *broker, topic string, records []byte) error {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version = 8
	req.Acks = 1
	req.TimeoutMillis = 30_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = 0
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := dialRaw(t, b.Addr()).request(req)
	if err != nil {
		t.Fatalf("produce to %s: the broker closed the connection instead of answering: %v", topic, err)
	}
	pr := resp.(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		t.Fatalf("produce to %s: %d topics in the answer", topic, len(pr.Topics))
	}
	return kerr.ErrorForCode(pr.Topics[0].Partitions[0].ErrorCode)
}

// endOffset is partition 0's log end offset.
func endOffset(t *testing.T, b *broker, topic string) int64 {
	t.Helper()
	ends, err := b.Admin(t).ListEndOffsets(testCtx(t, 30*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := ends.Lookup(topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("end offset of %s-0: %v %v", topic, ok, o.Err)
	}
	return o.Offset
}

// TestLyingBatches, on a broker process: batches whose header is consistent
// (a valid CRC) but whose records lie, and a zstd batch inflating to 1 GiB,
// to a topic that keeps the producer's compression and to one whose
// compression.type makes the broker recompress, are refused with an error
// for their partition; nothing is stored (the log end offset stays 0), the
// broker's memory grows by a bounded amount, and the broker serves the next
// client.
func TestLyingBatches(t *testing.T) {
	b := startBroker(t)
	gzip := "gzip"
	createTopic(t, b, "kept", 1, nil)
	createTopic(t, b, "recompressed", 1, map[string]*string{"compression.type": &gzip})
	base := b.procKB(t, "VmRSS")
	one := batch.AppendRecord(nil, 0, 0, []byte("k"), []byte("v"), nil)
	bomb := zstdBomb(t)
	t.Logf("zstd bomb of %d KiB inflating to 1 GiB", len(bomb)>>10)
	cases := []struct {
		name    string
		records []byte
	}{
		{"one record declared as 2^31-1", rawBatch(0, math.MaxInt32, one)},
		{"one record declared as 3", rawBatch(0, 3, one)},
		{"garbage in place of records", rawBatch(0, 2, bytes.Repeat([]byte{0xff}, 64))},
		{"two records declared as one", rawBatch(0, 1, append(bytes.Clone(one), batch.AppendRecord(nil, 0, 1, nil, []byte("w"), nil)...))},
		{"zstd bomb", bomb},
	}
	for _, topic := range []string{"kept", "recompressed"} {
		for _, c := range cases {
			if err := produceRaw(t, b, topic, c.records); err == nil {
				t.Errorf("%s to %s: accepted", c.name, topic)
			} else {
				t.Logf("%s to %s: %v", c.name, topic, err)
			}
		}
		if end := endOffset(t, b, topic); end != 0 {
			t.Errorf("%s: log end offset %d after the lying batches, want 0", topic, end)
		}
	}
	b.memoryBound(t, base, rssBoundMB, "lying batches and zstd bombs")
	if err := produceRaw(t, b, "kept", rawBatch(0, 1, one)); err != nil {
		t.Fatalf("an honest batch after the lies: %v", err)
	}
	worksAfter(t, b, "after-lies", "lying batches")
}
