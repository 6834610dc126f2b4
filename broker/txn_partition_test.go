package broker_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/brokertest"
	"github.com/ktoolhq/ktool/internal/batch"
)

// txnRecords builds a transactional batch of n records of producer pid,
// values "<tag>-<i>".
func txnRecords(pid int64, epoch int16, seq int32, tag string, n int) []byte {
	var body []byte
	for i := range n {
		body = batch.AppendRecord(body, 0, int32(i), nil, fmt.Appendf(nil, "%s-%d", tag, i), nil)
	}
	now := time.Now().UnixMilli()
	return batch.Encode(batch.Header{
		PartitionLeaderEpoch: -1,
		Attributes:           batch.AttrTransactional,
		LastOffsetDelta:      int32(n - 1),
		FirstTimestamp:       now,
		MaxTimestamp:         now,
		ProducerID:           pid,
		ProducerEpoch:        epoch,
		BaseSequence:         seq,
		NumRecords:           int32(n),
	}, body)
}

type txnTestEnv struct {
	t   *testing.T
	ctx context.Context
	cl  *kgo.Client
}

func (e *txnTestEnv) produce(txn, topic string, records []byte) int16 {
	e.t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	req.TransactionID = &txn
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(e.ctx, e.cl)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// initProducer gets transactional id id's producer id and epoch from its
// coordinator (inits times, each bumping the epoch) and adds partition 0 of
// topic to its transaction, as a client does before producing (KIP-890: the
// leader verifies it).
func (e *txnTestEnv) initProducer(id, topic string, inits int) (int64, int16) {
	e.t.Helper()
	co, _ := txnCoordinator(e.t, e.cl, id)
	var resp *kmsg.InitProducerIDResponse
	for range inits {
		brokertest.Eventually(e.t, 20*time.Second, func() error {
			var err error
			resp, err = txnInit(e.t, co, id, 1, 60000, -1, -1)
			if err != nil && !kerr.IsRetriable(err) {
				e.t.Fatalf("init producer id: %v", err)
			}
			return err
		})
	}
	if errs := txnAdd(e.t, co, 1, id, resp.ProducerID, resp.ProducerEpoch, topic, 0); errs[0] != nil {
		e.t.Fatalf("add partition: %v", errs[0])
	}
	return resp.ProducerID, resp.ProducerEpoch
}

// markers sends WriteTxnMarkers for one producer and returns each partition's error.
func (e *txnTestEnv) markers(pid int64, epoch int16, coordEpoch int32, commit bool, topic string, partitions ...int32) []int16 {
	e.t.Helper()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = pid, epoch, commit, coordEpoch
	m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: topic, Partitions: partitions}}
	req.Markers = append(req.Markers, m)
	// To the broker itself: the client would route by partition leader.
	kresp, err := e.cl.Broker(0).Request(e.ctx, req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp := kresp.(*kmsg.WriteTxnMarkersResponse)
	var codes []int16
	for _, p := range resp.Markers[0].Topics[0].Partitions {
		codes = append(codes, p.ErrorCode)
	}
	return codes
}

func (e *txnTestEnv) fetchCommitted(topic string) kmsg.FetchResponseTopicPartition {
	e.t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.IsolationLevel = -1, 1<<20, 1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(e.ctx, e.cl)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

func (e *txnTestEnv) latest(topic string, isolation int8) int64 {
	e.t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID, req.IsolationLevel = -1, isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(e.ctx, e.cl)
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		e.t.Fatalf("list offsets: %v %v", err, resp)
	}
	return resp.Topics[0].Partitions[0].Offset
}

// TestTxnPartitionSide drives the partition side of transactions with the
// requests a transaction coordinator and a transactional producer send:
// read_committed fetches stop at the last stable offset, markers close
// transactions (stale ones are fenced), aborted transactions are listed and
// a real read_committed consumer skips them.
func TestTxnPartitionSide(t *testing.T) {
	c := brokertest.NewCluster(t, 1, brokertest.WithProps(txnProps))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.Admin().CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	e := &txnTestEnv{t: t, ctx: ctx, cl: c.Client()}
	p1, ep1 := e.initProducer("tx1", "t", 2) // bumped: ep1-1 is a stale epoch
	p2, ep2 := e.initProducer("tx2", "t", 1)
	// A transaction the coordinator does not know of is refused (KIP-890),
	// and so is one of a known producer at another epoch.
	if code := e.produce("tx0", "t", txnRecords(1<<40, 0, 0, "stray", 1)); code != kerr.InvalidTxnState.Code && code != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("stray transactional batch: %v", kerr.ErrorForCode(code))
	}
	if code := e.produce("tx1", "t", txnRecords(p1, ep1-1, 0, "stale", 1)); code == 0 {
		t.Fatal("a transactional batch of a stale epoch was appended")
	}

	if code := e.produce("tx1", "t", txnRecords(p1, ep1, 0, "commit", 3)); code != 0 { // 0-2
		t.Fatalf("produce: %v", kerr.ErrorForCode(code))
	}
	if code := e.produce("tx2", "t", txnRecords(p2, ep2, 0, "abort", 2)); code != 0 { // 3-4
		t.Fatalf("produce: %v", kerr.ErrorForCode(code))
	}
	fp := e.fetchCommitted("t")
	if fp.HighWatermark != 5 || fp.LastStableOffset != 0 || len(fp.RecordBatches) != 0 {
		t.Fatalf("read_committed with both open: hw %d lso %d, %d bytes", fp.HighWatermark, fp.LastStableOffset, len(fp.RecordBatches))
	}
	if got := e.latest("t", 1); got != 0 {
		t.Fatalf("read_committed latest %d, want the LSO 0", got)
	}
	if got := e.latest("t", 0); got != 5 {
		t.Fatalf("read_uncommitted latest %d, want 5", got)
	}

	// A marker of an older producer epoch, and one of an unknown topic.
	if codes := e.markers(p1, ep1-1, 0, false, "t", 0); codes[0] != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("stale epoch marker: %v", kerr.ErrorForCode(codes[0]))
	}
	if codes := e.markers(p1, ep1, 0, true, "nope", 0); codes[0] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("marker to an unknown topic: %v", kerr.ErrorForCode(codes[0]))
	}
	if codes := e.markers(p1, ep1, 2, true, "t", 0, 0); len(codes) != 1 || codes[0] != 0 { // 5
		t.Fatalf("commit marker: %v", codes)
	}
	if codes := e.markers(p1, ep1, 1, true, "t", 0); codes[0] != kerr.TransactionCoordinatorFenced.Code {
		t.Fatalf("marker of an older coordinator: %v", kerr.ErrorForCode(codes[0]))
	}
	fp = e.fetchCommitted("t")
	if fp.LastStableOffset != 3 {
		t.Fatalf("LSO %d after the commit, want 3 (producer 2 open)", fp.LastStableOffset)
	}
	if codes := e.markers(p2, ep2, 2, false, "t", 0); codes[0] != 0 { // 6
		t.Fatalf("abort marker: %v", kerr.ErrorForCode(codes[0]))
	}
	// Plain records after the transactions.
	if err := e.cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("plain")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fp = e.fetchCommitted("t")
	if fp.LastStableOffset != 8 || fp.HighWatermark != 8 {
		t.Fatalf("after both markers: hw %d lso %d, want 8", fp.HighWatermark, fp.LastStableOffset)
	}
	if len(fp.AbortedTransactions) != 1 || fp.AbortedTransactions[0].ProducerID != p2 || fp.AbortedTransactions[0].FirstOffset != 3 {
		t.Fatalf("aborted transactions %+v, want producer %d from offset 3", fp.AbortedTransactions, p2)
	}
	if got := e.latest("t", 1); got != 8 {
		t.Fatalf("read_committed latest %d, want 8", got)
	}

	for _, iso := range []struct {
		level kgo.IsolationLevel
		want  []string
	}{
		{kgo.ReadCommitted(), []string{"commit-0", "commit-1", "commit-2", "plain"}},
		{kgo.ReadUncommitted(), []string{"commit-0", "commit-1", "commit-2", "abort-0", "abort-1", "plain"}},
	} {
		cons := c.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"t": {0: kgo.NewOffset().AtStart()}}), kgo.FetchIsolationLevel(iso.level))
		var got []string
		for len(got) < len(iso.want) {
			fs := cons.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("consumed %v, want %v", got, iso.want)
			}
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		cons.Close()
		if !slices.Equal(got, iso.want) {
			t.Fatalf("consumed %v, want %v", got, iso.want)
		}
	}
}

// TestTxnOffsetCommitMarkers commits a group's offsets inside a transaction:
// invisible until the COMMIT marker reaches __consumer_offsets, dropped by ABORT.
func TestTxnOffsetCommitMarkers(t *testing.T) {
	c := brokertest.NewCluster(t, 1, brokertest.WithProps(map[string]string{"offsets.topic.num.partitions": "1"}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := c.Admin()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "in"); err != nil {
		t.Fatal(err)
	}
	e := &txnTestEnv{t: t, ctx: ctx, cl: c.Client()}
	pid, epoch := e.initProducer("tx", "in", 1)
	brokertest.Eventually(t, 20*time.Second, func() error {
		return adm.FindGroupCoordinators(ctx, "g")["g"].Err
	})
	commit := func(offset int64) {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = "tx", "g", pid, epoch, -1
		req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "in", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}}}
		brokertest.Eventually(t, 20*time.Second, func() error {
			resp, err := req.RequestWith(ctx, e.cl)
			if err != nil {
				return err
			}
			return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
		})
	}
	fetched := func() int64 {
		os, err := adm.FetchOffsets(ctx, "g")
		if err != nil {
			t.Fatal(err)
		}
		if o, ok := os.Lookup("in", 0); ok {
			return o.At
		}
		return -1
	}
	commit(42)
	if got := fetched(); got != -1 {
		t.Fatalf("offset %d visible before the marker", got)
	}
	if codes := e.markers(pid, epoch, 0, true, "__consumer_offsets", 0); codes[0] != 0 {
		t.Fatalf("commit marker: %v", kerr.ErrorForCode(codes[0]))
	}
	if got := fetched(); got != 42 {
		t.Fatalf("offset %d after COMMIT, want 42", got)
	}
	commit(50)
	if codes := e.markers(pid, epoch, 0, false, "__consumer_offsets", 0); codes[0] != 0 {
		t.Fatalf("abort marker: %v", kerr.ErrorForCode(codes[0]))
	}
	if got := fetched(); got != 42 {
		t.Fatalf("offset %d after ABORT, want 42 kept", got)
	}
}

// TestTxnPipelinedProduce: a transaction's produce requests are pipelined
// (five in flight on one connection); the one that opens the transaction at
// the partition waits for the coordinator's verification (KIP-890), and the
// next ones must not be appended before it (they would be out of sequence).
func TestTxnPipelinedProduce(t *testing.T) {
	c := brokertest.NewCluster(t, 1, brokertest.WithProps(txnProps))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.Admin().CreateTopic(ctx, 1, 1, nil, "p"); err != nil {
		t.Fatal(err)
	}
	cl := txnProducer(t, c, "pipelined", kgo.ProducerBatchMaxBytes(512), kgo.ProducerLinger(0), kgo.RecordRetries(0))
	defer cl.Close()
	const perTxn = 2000
	for round := range 3 {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range perTxn {
			cl.Produce(ctx, &kgo.Record{Topic: "p", Partition: 0, Value: fmt.Appendf(nil, "%d-%d", round, i)}, nil)
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	if got := consumeAll(t, c, "p", kgo.ReadCommitted(), 3*perTxn); len(got) != 3*perTxn {
		t.Fatalf("read_committed read %d records, want %d", len(got), 3*perTxn)
	}
}
