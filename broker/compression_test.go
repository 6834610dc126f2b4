package broker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/brokertest"
	"github.com/ktoolhq/ktool/internal/batch"
	"github.com/ktoolhq/ktool/plugins/codec"
)

// fetchRaw returns the raw record batches of a partition from offset 0.
func fetchRaw(t *testing.T, cl *kgo.Client, topic string) []byte {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 100, 1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, 0, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("fetch error %d", p.ErrorCode)
	}
	return p.RecordBatches
}

// TestTopicCompressionType: a compression.type=zstd topic stores what an
// uncompressed producer sends as zstd batches with the same records, offsets and
// headers; a compression.type=producer topic never re-encodes on produce or
// fetch: each compressed batch is decompressed once, to validate its records.
func TestTopicCompressionType(t *testing.T) {
	var counter codec.Counter
	c := brokertest.NewCluster(t, 1, brokertest.WithCodecs(counter.Codecs(codec.NewSet(codec.Builtins()...))))
	adm := c.Admin()
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"compression.type": kadm.StringPtr("zstd")}, "z"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "p"); err != nil {
		t.Fatal(err)
	}
	prod := c.Client(kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(50*time.Millisecond))
	var recs []*kgo.Record
	for i := range 20 {
		recs = append(recs, &kgo.Record{Topic: "z", Key: []byte(fmt.Sprint("k", i)), Value: []byte(fmt.Sprint("value-", i)),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(fmt.Sprint(i))}}})
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if counter.Compressions() == 0 {
		t.Fatal("recompressing to zstd made no codec call")
	}
	raw := fetchRaw(t, prod, "z")
	hdrs, err := batch.ValidateLog(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hdrs {
		if h.Compression() != codec.IDZstd {
			t.Fatalf("stored batch codec %d, want zstd", h.Compression())
		}
	}
	got := consumeN(t, c, "z", 0, 20)
	for i, r := range got {
		if r.Offset != int64(i) || string(r.Key) != fmt.Sprint("k", i) || string(r.Value) != fmt.Sprint("value-", i) ||
			len(r.Headers) != 1 || string(r.Headers[0].Value) != fmt.Sprint(i) {
			t.Fatalf("record %d came back as %d %q=%q %v", i, r.Offset, r.Key, r.Value, r.Headers)
		}
	}

	compressions, decompressions := counter.Compressions(), counter.Decompressions()
	gz := c.Client(kgo.ProducerBatchCompression(kgo.GzipCompression()))
	for i := range 10 {
		// A value gzip shrinks: kgo sends a batch uncompressed when compressing does not pay.
		value := strings.Repeat(fmt.Sprint(i), 500)
		if err := gz.ProduceSync(ctx, &kgo.Record{Topic: "p", Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	consumeN(t, c, "p", 0, 10)
	if n := counter.Compressions() - compressions; n != 0 {
		t.Fatalf("%d Compress calls for a compression.type=producer topic; want none", n)
	}
	if n := counter.Decompressions() - decompressions; n != 10 {
		t.Fatalf("%d decompressions for 10 gzip batches; want one each, to validate its records", n)
	}
}
