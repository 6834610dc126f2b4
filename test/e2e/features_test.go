package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestBatchLargerThanFetchLimits: a fetch always returns at least the first batch
// even when it exceeds the partition and response limits (KIP-74), so a consumer
// with small limits does not get stuck behind a large record.
func TestBatchLargerThanFetchLimits(t *testing.T) {
	b := startBroker(t)
	adm := b.Admin(t)
	const topic = "large"
	createTopic(t, adm, topic, 1, map[string]*string{"max.message.bytes": kadm.StringPtr(strconv.Itoa(4 << 20))})
	rng := rand.New(rand.NewPCG(7, 8))
	big := make([]byte, 3<<20)
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	prod := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(5<<20), kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx := testCtx(t, time.Minute)
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("small")}, &kgo.Record{Value: big}).FirstErr(); err != nil {
		t.Fatalf("producing a 3 MiB record: %v", err)
	}
	got := consumeRange(t, b, topic, 0, 1, 1, kgo.FetchMaxBytes(64<<10), kgo.FetchMaxPartitionBytes(64<<10))
	if !bytes.Equal(got[0].Value, big) {
		t.Fatalf("3 MiB record came back as %d bytes", len(got[0].Value))
	}
}

// TestLogAppendTime: with message.timestamp.type=LogAppendTime the broker stamps
// batches with its own clock, whatever the producer set.
func TestLogAppendTime(t *testing.T) {
	b := startBroker(t)
	adm := b.Admin(t)
	const topic = "append-time"
	createTopic(t, adm, topic, 1, map[string]*string{"message.timestamp.type": kadm.StringPtr("LogAppendTime")})
	prod := b.Client(t, kgo.DefaultProduceTopic(topic))
	ctx := testCtx(t, 30*time.Second)
	before := time.Now().Add(-time.Second).Truncate(time.Millisecond)
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	rs := []*kgo.Record{{Value: []byte("a"), Timestamp: old}, {Value: []byte("b"), Timestamp: old}}
	if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	after := time.Now().Add(time.Second)
	for _, r := range consumeRange(t, b, topic, 0, 0, 2) {
		if r.Attrs.TimestampType() != 1 {
			t.Errorf("offset %d: timestamp type %d, want 1 (log append time)", r.Offset, r.Attrs.TimestampType())
		}
		if r.Timestamp.Before(before) || r.Timestamp.After(after) {
			t.Errorf("offset %d: timestamp %v, want the broker's append time (about %v)", r.Offset, r.Timestamp, before)
		}
	}
	// The produce response tells the producer the append time too.
	rc := dialRaw(t, b.Addr())
	resp, err := rc.Request(produceRequest(7, -1, topic, 0, encodeBatch(-1, -1, -1, old.UnixMilli(), batchRecord{value: []byte("c")})))
	if err != nil {
		t.Fatal(err)
	}
	if p := producePartition(t, resp); p.ErrorCode != 0 || p.LogAppendTime < before.UnixMilli() {
		t.Errorf("produce response: error %v, log append time %d, want at least %d", kerr.ErrorForCode(p.ErrorCode), p.LogAppendTime, before.UnixMilli())
	}
}

// TestTopicCompressionTypeRecompresses: compression.type=gzip on the topic makes
// the broker store gzip batches whatever the producer sent, records unchanged.
func TestTopicCompressionTypeRecompresses(t *testing.T) {
	b := startBroker(t)
	adm := b.Admin(t)
	const topic = "recompress"
	createTopic(t, adm, topic, 1, map[string]*string{"compression.type": kadm.StringPtr("gzip")})
	prod := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.SnappyCompression()),
		kgo.ProducerLinger(50*time.Millisecond), kgo.ProducerBatchMaxBytes(4<<20))
	want := shapes()
	if err := prod.ProduceSync(testCtx(t, 30*time.Second), want...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got := consumeRange(t, b, topic, 0, 0, len(want), kgo.FetchMaxBytes(16<<20), kgo.FetchMaxPartitionBytes(16<<20))
	for i := range want {
		if err := sameRecord(want[i], got[i]); err != nil {
			t.Errorf("record %d: %v", i, err)
		}
	}
	attr, err := firstBatchAttributes(filepath.Join(b.Dir(), topic+"-0", fmt.Sprintf("%020d.log", 0)))
	if err != nil {
		t.Fatal(err)
	}
	if attr&7 != 1 {
		t.Errorf("stored batch has codec bits %d, want 1 (gzip)", attr&7)
	}
}

// TestAcksZero: acks=0 produce gets no answer, the records are appended, and the
// connection keeps serving later requests in order.
func TestAcksZero(t *testing.T) {
	b := startBroker(t)
	adm := b.Admin(t)
	const topic = "acks0"
	createTopic(t, adm, topic, 1, nil)
	rc := dialRaw(t, b.Addr())
	for i := range 10 {
		if _, err := rc.Send(produceRequest(7, 0, topic, 0, encodeBatch(-1, -1, -1, time.Now().UnixMilli(), batchRecord{value: []byte(strconv.Itoa(i))}))); err != nil {
			t.Fatal(err)
		}
	}
	// The next answer on the connection is the ApiVersions one: no produce answers.
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	resp, err := rc.Request(req)
	if err != nil {
		t.Fatalf("request after ten acks=0 produces: %v", err)
	}
	if r := resp.(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	for _, r := range consumeRange(t, b, topic, 0, 0, 10) {
		if string(r.Value) != strconv.FormatInt(r.Offset, 10) {
			t.Fatalf("offset %d holds %q", r.Offset, r.Value)
		}
	}
	// kgo with acks=0 (no idempotence) works too.
	prod := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	if err := prod.ProduceSync(testCtx(t, 30*time.Second), &kgo.Record{Value: []byte("10")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		end, err := endOffsets(testCtx(t, 10*time.Second), adm, topic)
		if err != nil {
			return err
		}
		if end[0] != 11 {
			return fmt.Errorf("high watermark %d, want 11", end[0])
		}
		return nil
	})
}

// TestProduceAndFetchErrors: requests for partitions or offsets that do not exist
// get Kafka's errors.
func TestProduceAndFetchErrors(t *testing.T) {
	b := startBroker(t, "--override", "auto.create.topics.enable=false")
	adm := b.Admin(t)
	const topic = "errors"
	createTopic(t, adm, topic, 2, nil)
	rc := dialRaw(t, b.Addr())
	batch := func() []byte {
		return encodeBatch(-1, -1, -1, time.Now().UnixMilli(), batchRecord{value: []byte("x")})
	}
	for _, c := range []struct {
		name      string
		topic     string
		partition int32
	}{{"unknown partition", topic, 2}, {"negative partition", topic, -1}, {"unknown topic", "nope", 0}} {
		resp, err := rc.Request(produceRequest(7, -1, c.topic, c.partition, batch()))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if p := producePartition(t, resp); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("produce to %s: %v, want UNKNOWN_TOPIC_OR_PARTITION", c.name, kerr.ErrorForCode(p.ErrorCode))
		}
	}
	resp, err := rc.Request(produceRequest(7, -1, topic, 0, batch()))
	if err != nil {
		t.Fatal(err)
	}
	if p := producePartition(t, resp); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("produce: %v at %d", kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
	}
	if err := fetchError(t, b, topic, 0, 2); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Errorf("fetch past the high watermark: %v, want OFFSET_OUT_OF_RANGE", err)
	}
	if err := fetchError(t, b, topic, 0, 1); err != nil {
		t.Errorf("fetch at the high watermark: %v, want none (an empty answer)", err)
	}
	if err := fetchError(t, b, topic, 0, -5); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Errorf("fetch at a negative offset: %v, want OFFSET_OUT_OF_RANGE", err)
	}
	if err := fetchError(t, b, topic, 7, 0); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("fetch of an unknown partition: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
	// acks other than -1, 0 and 1 are invalid.
	resp, err = rc.Request(produceRequest(7, 2, topic, 0, batch()))
	if err != nil {
		t.Fatal(err)
	}
	if p := producePartition(t, resp); p.ErrorCode != kerr.InvalidRequiredAcks.Code {
		t.Errorf("acks=2: %v, want INVALID_REQUIRED_ACKS", kerr.ErrorForCode(p.ErrorCode))
	}
}

// TestCreatePartitions grows a topic; the new partition takes writes and the old
// ones keep their data.
func TestCreatePartitions(t *testing.T) {
	b := startBroker(t)
	adm := b.Admin(t)
	ctx := testCtx(t, time.Minute)
	const topic = "grow"
	createTopic(t, adm, topic, 1, nil)
	prod := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("p0")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	resp, err := adm.CreatePartitions(ctx, 2, topic)
	if err != nil || resp[topic].Err != nil {
		t.Fatalf("CreatePartitions +2: %v %v", err, resp[topic].Err)
	}
	if resp, err := adm.UpdatePartitions(ctx, 2, topic); err != nil || !errors.Is(resp[topic].Err, kerr.InvalidPartitions) {
		t.Errorf("shrinking to 2 partitions: %v %v, want INVALID_PARTITIONS", err, resp[topic].Err)
	}
	eventually(t, 30*time.Second, func() error {
		return topicReady(metadataFor(t, dialRaw(t, b.Addr()), 9, false, topic), topic, 3)
	})
	// A new client, so its first metadata already has the new partition.
	prod = b.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := prod.ProduceSync(ctx, &kgo.Record{Partition: 2, Value: []byte("p2")}).FirstErr(); err != nil {
		t.Fatalf("produce to the new partition: %v", err)
	}
	if got := consumeRange(t, b, topic, 2, 0, 1); string(got[0].Value) != "p2" {
		t.Fatalf("new partition holds %q", got[0].Value)
	}
	if got := consumeRange(t, b, topic, 0, 0, 1); string(got[0].Value) != "p0" {
		t.Fatalf("old partition holds %q", got[0].Value)
	}
}

// TestCleanShutdownKeepsEverything: SIGTERM exits 0 after writing the clean
// shutdown markers; a restart serves the same records, offsets and cluster id.
func TestCleanShutdownKeepsEverything(t *testing.T) {
	b := startBroker(t)
	adm := b.Admin(t)
	ctx := testCtx(t, time.Minute)
	const topic = "clean"
	createTopic(t, adm, topic, 2, nil)
	prod := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var rs []*kgo.Record
	for i := range 200 {
		rs = append(rs, &kgo.Record{Partition: int32(i % 2), Value: []byte(strconv.Itoa(i))})
	}
	if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	clusterBefore := clusterID(t, adm)
	b.Stop(t)
	for p := range 2 {
		if _, err := os.Stat(filepath.Join(b.Dir(), fmt.Sprintf("%s-%d", topic, p), ".kafka_cleanshutdown")); err != nil {
			t.Errorf("no clean shutdown marker after SIGTERM: %v", err)
		}
	}
	b.Restart(t)
	if got := clusterID(t, adm); got != clusterBefore {
		t.Errorf("cluster id %q after restart, was %q", got, clusterBefore)
	}
	end, err := endOffsets(ctx, adm, topic)
	if err != nil {
		t.Fatal(err)
	}
	if end[0] != 100 || end[1] != 100 {
		t.Fatalf("end offsets after restart %v, want 100 and 100", end)
	}
	for p := range int32(2) {
		for _, r := range consumeRange(t, b, topic, p, 0, 100) {
			if want := strconv.FormatInt(r.Offset*2+int64(p), 10); string(r.Value) != want {
				t.Fatalf("partition %d offset %d holds %q, want %q", p, r.Offset, r.Value, want)
			}
		}
	}
}

func clusterID(t testing.TB, adm *kadm.Client) string {
	t.Helper()
	m, err := adm.BrokerMetadata(testCtx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if m.Cluster == "" {
		t.Fatal("empty cluster id")
	}
	return m.Cluster
}

// TestClusterMetadata: the broker describes itself as Kafka clients expect.
func TestClusterMetadata(t *testing.T) {
	b := startBroker(t)
	adm := b.Admin(t)
	m, err := adm.BrokerMetadata(testCtx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if m.Controller != 0 {
		t.Errorf("controller %d, want 0", m.Controller)
	}
	if len(m.Brokers) != 1 || m.Brokers[0].NodeID != 0 || m.Brokers[0].Host != "127.0.0.1" || m.Brokers[0].Port != int32(b.Port()) {
		t.Errorf("brokers %+v, want node 0 at %s", m.Brokers, b.Addr())
	}
	rc := dialRaw(t, b.Addr())
	req := kmsg.NewPtrDescribeClusterRequest()
	req.Version = 0
	resp, err := rc.Request(req)
	if err != nil {
		t.Fatalf("DescribeCluster: %v", err)
	}
	dc := resp.(*kmsg.DescribeClusterResponse)
	if dc.ErrorCode != 0 || dc.ControllerID != 0 || dc.ClusterID != m.Cluster || len(dc.Brokers) != 1 || dc.Brokers[0].Port != int32(b.Port()) {
		t.Errorf("DescribeCluster %+v disagrees with Metadata %+v", dc, m)
	}
}

// TestProduceMixedResults: one Produce request for several topics and partitions,
// some of them bad, gets an answer per partition; the good ones are appended.
func TestProduceMixedResults(t *testing.T) {
	b := startBroker(t, "--override", "auto.create.topics.enable=false")
	adm := b.Admin(t)
	createTopic(t, adm, "mix-a", 2, nil)
	createTopic(t, adm, "mix-b", 1, map[string]*string{"max.message.bytes": kadm.StringPtr("100")})
	batch := func(size int) []byte {
		return encodeBatch(-1, -1, -1, time.Now().UnixMilli(), batchRecord{value: bytes.Repeat([]byte("m"), size)})
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version = 8
	req.Acks = -1
	req.TimeoutMillis = 10000
	add := func(topic string, partition int32, records []byte) {
		i := 0
		for i < len(req.Topics) && req.Topics[i].Topic != topic {
			i++
		}
		if i == len(req.Topics) {
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = topic
			req.Topics = append(req.Topics, rt)
		}
		p := kmsg.NewProduceRequestTopicPartition()
		p.Partition, p.Records = partition, records
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
	}
	add("mix-a", 0, batch(10))
	add("mix-a", 1, batch(10))
	add("mix-a", 9, batch(10))
	add("mix-b", 0, batch(500))
	add("mix-none", 0, batch(10))
	resp, err := dialRaw(t, b.Addr()).Request(req)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int16{
		"mix-a/0":    0,
		"mix-a/1":    0,
		"mix-a/9":    kerr.UnknownTopicOrPartition.Code,
		"mix-b/0":    kerr.MessageTooLarge.Code,
		"mix-none/0": kerr.UnknownTopicOrPartition.Code,
	}
	got := map[string]int16{}
	for _, rt := range resp.(*kmsg.ProduceResponse).Topics {
		for _, p := range rt.Partitions {
			got[fmt.Sprintf("%s/%d", rt.Topic, p.Partition)] = p.ErrorCode
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("per-partition errors %v, want %v", got, want)
	}
	end, err := endOffsets(testCtx(t, 10*time.Second), adm, "mix-a")
	if err != nil {
		t.Fatal(err)
	}
	if end[0] != 1 || end[1] != 1 {
		t.Fatalf("mix-a end offsets %v, want 1 and 1", end)
	}
}
