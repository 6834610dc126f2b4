package e2e

import (
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// initProducerID asks for an idempotent producer id over a raw connection.
func initProducerID(t testing.TB, rc *rawConn) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 1
	req.TransactionTimeoutMillis = -1
	resp, err := rc.Request(req)
	if err != nil {
		t.Fatalf("InitProducerID: %v", err)
	}
	r := resp.(*kmsg.InitProducerIDResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		t.Fatalf("InitProducerID: %v", err)
	}
	if r.ProducerID < 0 {
		t.Fatalf("InitProducerID returned producer id %d", r.ProducerID)
	}
	return r.ProducerID, r.ProducerEpoch
}

func TestIdempotentDuplicateGetsOriginalOffset(t *testing.T) {
	b := startBroker(t)
	adm := b.Admin(t)
	const topic = "idem-raw"
	createTopic(t, adm, topic, 1, nil)
	// Something before the idempotent batches, so offsets are not trivially 0.
	prod := b.Client(t, kgo.DefaultProduceTopic(topic))
	if err := prod.ProduceSync(testCtx(t, 30*time.Second), &kgo.Record{Value: []byte("first")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	rc := dialRaw(t, b.Addr())
	pid, epoch := initProducerID(t, rc)
	batch := func(seq int32, n int) []byte {
		recs := make([]batchRecord, n)
		for i := range recs {
			recs[i] = batchRecord{value: []byte("seq " + strconv.Itoa(int(seq)+i)), tsDelta: int64(i)}
		}
		return encodeBatch(pid, epoch, seq, time.Now().UnixMilli(), recs...)
	}
	produce := func(acks int16, seq int32, n int) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		resp, err := rc.Request(produceRequest(8, acks, topic, 0, batch(seq, n)))
		if err != nil {
			t.Fatalf("produce seq %d: %v", seq, err)
		}
		return producePartition(t, resp)
	}
	expectOK := func(what string, p kmsg.ProduceResponseTopicPartition, offset int64) {
		t.Helper()
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if p.BaseOffset != offset {
			t.Fatalf("%s: base offset %d, want %d", what, p.BaseOffset, offset)
		}
	}

	expectOK("seq 0", produce(-1, 0, 3), 1)
	expectOK("duplicate of seq 0", produce(-1, 0, 3), 1)
	expectOK("seq 3", produce(1, 3, 2), 4)
	expectOK("duplicate of seq 0 again, acks=1", produce(1, 0, 3), 1)
	expectOK("duplicate of seq 3", produce(-1, 3, 2), 4)
	if p := produce(-1, 10, 1); p.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("sequence gap: error %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", kerr.ErrorForCode(p.ErrorCode))
	}
	expectOK("seq 5", produce(-1, 5, 1), 6)

	end, err := endOffsets(testCtx(t, 10*time.Second), adm, topic)
	if err != nil {
		t.Fatal(err)
	}
	if end[0] != 7 {
		t.Fatalf("high watermark %d, want 7: duplicates were appended", end[0])
	}
	got := consumeRange(t, b, topic, 0, 0, 7)
	for i, r := range got[1:] {
		if want := "seq " + strconv.Itoa(i); string(r.Value) != want {
			t.Errorf("offset %d holds %q, want %q", r.Offset, r.Value, want)
		}
	}
}

// TestIdempotentProducerManyInFlight sends with kgo's default idempotent producer
// (which keeps up to five requests in flight from produce v4 on) over several
// partitions in small batches, and reads back every record exactly once in order.
func TestIdempotentProducerManyInFlight(t *testing.T) {
	b := startBroker(t)
	adm := b.Admin(t)
	const topic, parts, n = "idem-kgo", 3, 30000
	createTopic(t, adm, topic, parts, nil)
	prod := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(16<<10))
	ctx := testCtx(t, 2*time.Minute)
	errs := make(chan error, 1)
	for i := range n {
		r := &kgo.Record{Partition: int32(i % parts), Value: []byte(strconv.Itoa(i))}
		prod.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		t.Fatalf("produce: %v", err)
	default:
	}
	for p := range int32(parts) {
		got := consumeRange(t, b, topic, p, 0, n/parts)
		for j, r := range got {
			if want := strconv.Itoa(j*parts + int(p)); string(r.Value) != want {
				t.Fatalf("partition %d offset %d holds %q, want %q", p, r.Offset, r.Value, want)
			}
		}
	}
}

// TestIdempotentProducerAcrossRestart keeps one idempotent producer running while
// the broker restarts cleanly: the broker must remember the producer's sequences, so
// the producer carries on with no error, no gap and no duplicate.
func TestIdempotentProducerAcrossRestart(t *testing.T) {
	b := startBroker(t)
	adm := b.Admin(t)
	const topic = "idem-restart"
	createTopic(t, adm, topic, 1, nil)
	prod := b.Client(t, kgo.DefaultProduceTopic(topic))
	ctx := testCtx(t, 2*time.Minute)
	send := func(from, to int) {
		t.Helper()
		var rs []*kgo.Record
		for i := from; i < to; i++ {
			rs = append(rs, &kgo.Record{Value: []byte(strconv.Itoa(i))})
		}
		if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("produce %d..%d: %v", from, to, err)
		}
	}
	send(0, 500)
	b.Stop(t)
	b.Restart(t)
	send(500, 1000)
	got := consumeRange(t, b, topic, 0, 0, 1000)
	for i, r := range got {
		if string(r.Value) != strconv.Itoa(i) {
			t.Fatalf("offset %d holds %q, want %d", r.Offset, r.Value, i)
		}
	}
}
