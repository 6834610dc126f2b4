package e2e

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchLimits: partition_max_bytes and max_bytes bound what a fetch returns
// (apart from the first batch, KIP-74), a read_committed fetch sees the high
// watermark as last stable offset (there are no transactions), and an incremental
// fetch session is declined the way Kafka allows.
func TestFetchLimits(t *testing.T) {
	b := startBroker(t)
	const topic = "limits"
	createTopic(t, b.Admin(t), topic, 2, nil)
	prod := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	produceNumbered(t, prod, topic, 0, 0, 50, 100, time.Time{})
	produceNumbered(t, prod, topic, 1, 0, 50, 100, time.Time{})

	rc := dialRaw(t, b.Addr())
	fetch := func(maxBytes, partMax int32, isolation int8) *kmsg.FetchResponse {
		t.Helper()
		req := fetchRequest(topic, 0, 0)
		req.MaxBytes = maxBytes
		req.IsolationLevel = isolation
		req.Topics[0].Partitions[0].PartitionMaxBytes = partMax
		p1 := req.Topics[0].Partitions[0]
		p1.Partition = 1
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, p1)
		resp, err := rc.Request(req)
		if err != nil {
			t.Fatal(err)
		}
		fr := resp.(*kmsg.FetchResponse)
		if err := kerr.ErrorForCode(fr.ErrorCode); err != nil {
			t.Fatal(err)
		}
		return fr
	}

	fr := fetch(1<<20, 1000, 0)
	for _, p := range fr.Topics[0].Partitions {
		if n := len(p.RecordBatches); n == 0 || n > 1000 {
			t.Errorf("partition %d: %d record bytes with partition_max_bytes 1000", p.Partition, n)
		}
		recs, err := recordsOf(p.RecordBatches)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 0 || recs[0].offset != 0 {
			t.Errorf("partition %d: records %v, want a run from offset 0", p.Partition, recs)
		}
	}

	fr = fetch(1500, 1<<20, 0)
	total := 0
	for _, p := range fr.Topics[0].Partitions {
		total += len(p.RecordBatches)
	}
	if total == 0 || total > 1500 {
		t.Errorf("%d record bytes in all with max_bytes 1500", total)
	}

	// One byte of budget still returns one whole batch (KIP-74).
	fr = fetch(1, 1, 0)
	recs, err := recordsOf(fr.Topics[0].Partitions[0].RecordBatches)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].offset != 0 {
		t.Errorf("fetch with 1-byte limits returned %d records, want the first batch", len(recs))
	}

	fr = fetch(1<<20, 1<<20, 1)
	for _, p := range fr.Topics[0].Partitions {
		if p.LastStableOffset != 50 || p.HighWatermark != 50 {
			t.Errorf("read_committed partition %d: LSO %d, HW %d, want 50 and 50", p.Partition, p.LastStableOffset, p.HighWatermark)
		}
		if recs, err := recordsOf(p.RecordBatches); err != nil || len(recs) != 50 {
			t.Errorf("read_committed partition %d: %d records (%v), want 50", p.Partition, len(recs), err)
		}
	}

	// A client asking for a new session (id 0, epoch 0) gets a full answer; an
	// incremental fetch on a session the broker never created is refused.
	req := fetchRequest(topic, 0, 0)
	req.SessionEpoch = 0
	resp, err := rc.Request(req)
	if err != nil {
		t.Fatal(err)
	}
	if fr := resp.(*kmsg.FetchResponse); fr.ErrorCode != 0 || len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		t.Errorf("session-creating fetch: %v with %d topics", kerr.ErrorForCode(fr.ErrorCode), len(fr.Topics))
	}
	req = fetchRequest(topic, 0, 0)
	req.SessionID, req.SessionEpoch = 12345, 1
	resp, err = rc.Request(req)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.FetchResponse).ErrorCode; code != kerr.FetchSessionIDNotFound.Code {
		t.Errorf("incremental fetch on an unknown session: %v, want FETCH_SESSION_ID_NOT_FOUND", kerr.ErrorForCode(code))
	}
}
