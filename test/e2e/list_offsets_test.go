package e2e

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// listOffset asks for one partition's offset at timestamp ts (-1 latest, -2
// earliest, -3 max timestamp) at the given ListOffsets version.
func listOffset(t testing.TB, rc *rawConn, version int16, topic string, ts int64) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = version
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = 0
	rp.Timestamp = ts
	rp.CurrentLeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := rc.Request(req)
	if err != nil {
		t.Fatalf("ListOffsets v%d ts %d: %v", version, ts, err)
	}
	lr := resp.(*kmsg.ListOffsetsResponse)
	if len(lr.Topics) != 1 || len(lr.Topics[0].Partitions) != 1 {
		t.Fatalf("ListOffsets v%d ts %d: %d topics in the answer", version, ts, len(lr.Topics))
	}
	return lr.Topics[0].Partitions[0]
}

func TestListOffsets(t *testing.T) {
	b := startBroker(t)
	adm := b.Admin(t)
	const topic = "list-offsets"
	createTopic(t, adm, topic, 1, nil)
	prod := b.Client(t, kgo.DefaultProduceTopic(topic))
	ctx := testCtx(t, 30*time.Second)
	// One batch per record (offsets 0-4), with the largest timestamp in the middle.
	for _, ts := range []int64{1000, 2000, 5000, 3000, 4000} {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("x"), Timestamp: time.UnixMilli(ts)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// One batch at offsets 5-7 whose timestamps are not in order: 10000, 12000, 11000.
	rc := dialRaw(t, b.Addr())
	resp, err := rc.Request(produceRequest(7, -1, topic, 0, encodeBatch(-1, -1, -1, 10000,
		batchRecord{value: []byte("a"), tsDelta: 0},
		batchRecord{value: []byte("b"), tsDelta: 2000},
		batchRecord{value: []byte("c"), tsDelta: 1000},
	)))
	if err != nil {
		t.Fatal(err)
	}
	if p := producePartition(t, resp); p.ErrorCode != 0 || p.BaseOffset != 5 {
		t.Fatalf("raw produce: error %v, base offset %d, want offset 5", kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
	}

	cases := []struct {
		name    string
		version int16
		ts      int64
		offset  int64
		stamp   int64 // checked from v1 on
	}{
		{"earliest v0", 0, -2, 0, -1},
		{"latest v0", 0, -1, 8, -1},
		{"earliest", 1, -2, 0, -1},
		{"latest", 1, -1, 8, -1},
		{"earliest v7", 7, -2, 0, -1},
		{"latest v7", 7, -1, 8, -1},
		{"before everything", 1, 1, 0, 1000},
		{"exact first", 1, 1000, 0, 1000},
		{"between", 1, 1500, 1, 2000},
		{"first at or after, not the nearest", 1, 2500, 2, 5000},
		{"after the middle max", 1, 5001, 5, 10000},
		{"inside a batch: first record at or after", 1, 10500, 6, 12000},
		{"inside a batch, later record", 1, 11500, 6, 12000},
		{"between v4, with the batch's leader epoch", 4, 1500, 1, 2000},
		{"inside a batch v7", 7, 10500, 6, 12000},
		{"after everything", 1, 12001, -1, -1},
		{"max timestamp v7", 7, -3, 6, 12000},
	}
	for _, c := range cases {
		p := listOffset(t, rc, c.version, topic, c.ts)
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		offset := p.Offset
		if c.version == 0 {
			if len(p.OldStyleOffsets) != 1 {
				t.Errorf("%s: old style offsets %v, want one", c.name, p.OldStyleOffsets)
				continue
			}
			offset = p.OldStyleOffsets[0]
		}
		if offset != c.offset {
			t.Errorf("%s (ts %d, v%d): offset %d, want %d", c.name, c.ts, c.version, offset, c.offset)
		}
		if c.version >= 1 && c.ts >= 0 && p.Timestamp != c.stamp {
			t.Errorf("%s (ts %d, v%d): timestamp %d, want %d", c.name, c.ts, c.version, p.Timestamp, c.stamp)
		}
		// From v4 a found timestamp comes with its batch's leader epoch, as
		// Kafka answers (the topic's only epoch here is 0).
		if c.version >= 4 && c.ts >= 0 && c.offset >= 0 && p.LeaderEpoch != 0 {
			t.Errorf("%s (ts %d, v%d): leader epoch %d, want 0", c.name, c.ts, c.version, p.LeaderEpoch)
		}
		if c.ts == -3 && p.Timestamp != c.stamp {
			t.Errorf("%s: timestamp %d, want %d", c.name, p.Timestamp, c.stamp)
		}
	}

	// kadm's view agrees.
	start, err := startOffsets(ctx, adm, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, err := endOffsets(ctx, adm, topic)
	if err != nil {
		t.Fatal(err)
	}
	if start[0] != 0 || end[0] != 8 {
		t.Errorf("kadm start %d end %d, want 0 and 8", start[0], end[0])
	}
	after, err := adm.ListOffsetsAfterMilli(ctx, 2500, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := after.Lookup(topic, 0); !ok || o.Err != nil || o.Offset != 2 {
		t.Errorf("kadm ListOffsetsAfterMilli(2500): %+v, want offset 2", o)
	}
}

// TestListOffsetsInsideCompressedBatch: a timestamp lookup finds the first record
// at or after the timestamp even inside a compressed batch, where the broker must
// look into the records rather than the batch header.
func TestListOffsetsInsideCompressedBatch(t *testing.T) {
	b := startBroker(t)
	adm := b.Admin(t)
	for _, c := range codecs[1:] {
		t.Run(c.name, func(t *testing.T) {
			topic := "ts-" + c.name
			createTopic(t, adm, topic, 1, nil)
			prod := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(c.codec), kgo.ProducerLinger(50*time.Millisecond))
			ctx := testCtx(t, 30*time.Second)
			var rs []*kgo.Record
			for _, ts := range []int64{10000, 30000, 20000, 25000} {
				rs = append(rs, &kgo.Record{Value: bytes.Repeat([]byte("z"), 200), Timestamp: time.UnixMilli(ts)})
			}
			if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			if attr, err := firstBatchAttributes(filepath.Join(b.Dir(), topic+"-0", fmt.Sprintf("%020d.log", 0))); err != nil || attr&7 != c.attr {
				t.Fatalf("records not stored as one %s batch: attributes %d, %v", c.name, attr, err)
			}
			rc := dialRaw(t, b.Addr())
			for _, q := range []struct{ ts, offset, stamp int64 }{{15000, 1, 30000}, {22000, 1, 30000}, {30000, 1, 30000}, {5000, 0, 10000}} {
				p := listOffset(t, rc, 4, topic, q.ts)
				if p.ErrorCode != 0 || p.Offset != q.offset || p.Timestamp != q.stamp {
					t.Errorf("ts %d: %v, offset %d at %d; want offset %d at %d", q.ts, kerr.ErrorForCode(p.ErrorCode), p.Offset, p.Timestamp, q.offset, q.stamp)
				}
			}
			if p := listOffset(t, rc, 7, topic, -3); p.ErrorCode != 0 || p.Timestamp != 30000 {
				t.Errorf("max timestamp: %v, offset %d at %d; want timestamp 30000", kerr.ErrorForCode(p.ErrorCode), p.Offset, p.Timestamp)
			}
		})
	}
}
