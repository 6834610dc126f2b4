package broker_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/brokertest"
)

// txnProducer is a franz-go transactional producer of id.
func txnProducer(t *testing.T, c *brokertest.Cluster, id string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return c.Client(append([]kgo.Opt{kgo.TransactionalID(id), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionTimeout(30 * time.Second), kgo.RecordRetries(100)}, opts...)...)
}

// produceTxn produces values tag-0..tag-(n-1) to topic/0 in one transaction and ends it.
func produceTxn(ctx context.Context, cl *kgo.Client, topic, tag string, n int, commit bool) error {
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	for i := range n {
		r := &kgo.Record{Topic: topic, Partition: 0, Value: []byte(tag + "-" + strconv.Itoa(i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			return err
		}
	}
	return cl.EndTransaction(ctx, kgo.TransactionEndTry(commit))
}

// consumeAll reads topic from the start with isolation iso until it has want
// records or the deadline passes, returning the values in order.
func consumeAll(t *testing.T, c *brokertest.Cluster, topic string, iso kgo.IsolationLevel, want int) []string {
	t.Helper()
	cl := c.Client(kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(iso), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []string
	for len(out) < want && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	// A little longer, so extra records (aborted ones) would show.
	short, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	cl.PollFetches(short).EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	return out
}

func values(tag string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, tag+"-"+strconv.Itoa(i))
	}
	return out
}

func waitTxnState(t *testing.T, c *brokertest.Cluster, id, state string) kmsg.DescribeTransactionsResponseTransactionState {
	t.Helper()
	var d kmsg.DescribeTransactionsResponseTransactionState
	brokertest.Eventually(t, 30*time.Second, func() error {
		co, _ := txnCoordinator(t, c.Client(), id)
		d = txnDescribe(t, co, id)
		if err := kerr.ErrorForCode(d.ErrorCode); err != nil {
			return err
		}
		if d.State != state {
			return fmt.Errorf("state %s, want %s", d.State, state)
		}
		return nil
	})
	return d
}

// TestTxnEndToEnd: a franz-go transactional producer commits, aborts and
// commits; a read_committed consumer sees exactly the committed records, in
// order; a second producer with the same id fences the first.
func TestTxnEndToEnd(t *testing.T) {
	c := brokertest.NewCluster(t, 1, brokertest.WithProps(txnProps))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.Admin().CreateTopic(ctx, 1, 1, nil, "tx-e2e"); err != nil {
		t.Fatal(err)
	}
	p := txnProducer(t, c, "e2e")
	if err := produceTxn(ctx, p, "tx-e2e", "a", 5, true); err != nil {
		t.Fatal(err)
	}
	if err := produceTxn(ctx, p, "tx-e2e", "b", 4, false); err != nil {
		t.Fatal(err)
	}
	if err := produceTxn(ctx, p, "tx-e2e", "c", 3, true); err != nil {
		t.Fatal(err)
	}
	waitTxnState(t, c, "e2e", "CompleteCommit")
	want := append(values("a", 5), values("c", 3)...)
	if got := consumeAll(t, c, "tx-e2e", kgo.ReadCommitted(), len(want)); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read_committed: %v, want %v", got, want)
	}
	if got := consumeAll(t, c, "tx-e2e", kgo.ReadUncommitted(), 12); len(got) != 12 {
		t.Fatalf("read_uncommitted: %d records, want 12 (aborted ones included): %v", len(got), got)
	}

	// A new producer with the same id fences the old one, whose open
	// transaction is aborted.
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: "tx-e2e", Value: []byte("zombie")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	p2 := txnProducer(t, c, "e2e")
	if err := produceTxn(ctx, p2, "tx-e2e", "d", 2, true); err != nil {
		t.Fatal(err)
	}
	err := p.EndTransaction(ctx, kgo.TryCommit)
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("the fenced producer's commit: %v", err)
	}
	want = append(want, values("d", 2)...)
	if got := consumeAll(t, c, "tx-e2e", kgo.ReadCommitted(), len(want)); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read_committed after the fence: %v, want %v", got, want)
	}
}

// TestTxnTimeoutAbort: a transaction left open past its timeout is aborted by
// the coordinator with a bumped epoch; its producer is fenced and the last
// stable offset moves on.
func TestTxnTimeoutAbort(t *testing.T) {
	c := brokertest.NewCluster(t, 1, brokertest.WithProps(txnProps))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.Admin().CreateTopic(ctx, 1, 1, nil, "tx-timeout"); err != nil {
		t.Fatal(err)
	}
	p := txnProducer(t, c, "slow", kgo.TransactionTimeout(time.Second))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: "tx-timeout", Value: []byte("late")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	d := waitTxnState(t, c, "slow", "CompleteAbort")
	if d.ProducerEpoch != 1 {
		t.Fatalf("epoch after the timeout abort: %d, want 1", d.ProducerEpoch)
	}
	err := p.EndTransaction(ctx, kgo.TryCommit)
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("commit after the timeout: %v", err)
	}
	adm := c.Admin()
	brokertest.Eventually(t, 10*time.Second, func() error {
		end, err := adm.ListEndOffsets(ctx, "tx-timeout")
		if err != nil {
			return err
		}
		stable, err := adm.ListCommittedOffsets(ctx, "tx-timeout")
		if err != nil {
			return err
		}
		e, _ := end.Lookup("tx-timeout", 0)
		s, _ := stable.Lookup("tx-timeout", 0)
		if s.Offset != e.Offset || e.Offset != 2 {
			return fmt.Errorf("last stable offset %d, log end %d (want both 2: the record and the abort marker)", s.Offset, e.Offset)
		}
		return nil
	})
	if got := consumeAll(t, c, "tx-timeout", kgo.ReadCommitted(), 0); len(got) != 0 {
		t.Fatalf("read_committed saw aborted records: %v", got)
	}
}

// TestTxnMarkersSurviveCoordinatorFailover: a commit whose marker cannot be
// delivered (the partition's only replica is down) stays in PrepareCommit; the
// coordinator is killed; the next coordinator loads PrepareCommit and sends the
// marker again once the partition is back, completing the commit.
func TestTxnMarkersSurviveCoordinatorFailover(t *testing.T) {
	props := map[string]string{"transaction.state.log.min.isr": "1"}
	for k, v := range txnProps {
		props[k] = v
	}
	c := brokertest.NewCluster(t, 3, brokertest.WithProps(props))
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	const id = "failover"
	_, coord := txnCoordinator(t, c.Client(), id)
	var data int32 = -1
	for _, b := range c.IDs() {
		if b != coord {
			data = b
			break
		}
	}
	// The data partition lives on one broker that is not the coordinator.
	ct := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "tx-failover", -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{data}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	ct.Topics = append(ct.Topics, rt)
	if resp, err := ct.RequestWith(ctx, c.Client()); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %+v %v", resp, err)
	}
	p := txnProducer(t, c, id)
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: "tx-failover", Value: []byte("f-" + strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	c.Kill(data)
	// EndTxn answers once PrepareCommit is written; the marker waits for the partition.
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	co, _ := txnCoordinator(t, c.Client(), id)
	if d := txnDescribe(t, co, id); d.State != "PrepareCommit" {
		t.Fatalf("with the partition down: %+v", d)
	}
	c.Kill(coord)
	brokertest.Eventually(t, 60*time.Second, func() error {
		co, node := txnCoordinator(t, c.Client(), id)
		if node == coord {
			return fmt.Errorf("still coordinated by the killed broker %d", node)
		}
		d := txnDescribe(t, co, id)
		if err := kerr.ErrorForCode(d.ErrorCode); err != nil {
			return err
		}
		if d.State != "PrepareCommit" {
			return fmt.Errorf("the new coordinator has %s, want PrepareCommit", d.State)
		}
		return nil
	})
	c.Restart(data)
	waitTxnState(t, c, id, "CompleteCommit")
	if got := consumeAll(t, c, "tx-failover", kgo.ReadCommitted(), 3); fmt.Sprint(got) != fmt.Sprint(values("f", 3)) {
		t.Fatalf("read_committed: %v", got)
	}
}

// TestTxnGroupTransactSession: franz-go's consume-transform-produce session on
// three brokers moves every input record to the output exactly once, with the
// group's offsets committed in the same transactions.
func TestTxnGroupTransactSession(t *testing.T) {
	c := brokertest.NewCluster(t, 3, brokertest.WithProps(txnProps))
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	adm := c.Admin()
	for _, topic := range []string{"etl-in", "etl-out"} {
		if _, err := adm.CreateTopic(ctx, 3, 3, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	const n = 300
	in := c.Client()
	for i := range n {
		in.Produce(ctx, &kgo.Record{Topic: "etl-in", Value: []byte(strconv.Itoa(i))}, nil)
	}
	if err := in.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(c.Addrs()...), kgo.TransactionalID("etl-session"),
		kgo.ConsumerGroup("etl"), kgo.ConsumeTopics("etl-in"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.TransactionTimeout(30*time.Second), kgo.DefaultProduceTopic("etl-out"), kgo.RequireStableFetchOffsets())
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	moved := 0
	for moved < n && ctx.Err() == nil {
		fs := sess.PollFetches(ctx)
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			sess.Produce(ctx, &kgo.Record{Value: append([]byte("out-"), r.Value...)}, nil)
			moved++
		})
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			t.Fatal(err)
		}
		if !committed {
			t.Log("a transaction was aborted (rebalance); its records are read again")
		}
	}
	got := consumeAll(t, c, "etl-out", kgo.ReadCommitted(), n)
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	for i := range n {
		if seen["out-"+strconv.Itoa(i)] != 1 {
			t.Fatalf("output has out-%d %d times (%d records in all)", i, seen["out-"+strconv.Itoa(i)], len(got))
		}
	}
	if len(got) != n {
		t.Fatalf("output has %d records, want %d", len(got), n)
	}
	offs, err := committed(ctx, adm, "etl")
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	for _, o := range offs {
		total += o
	}
	if total != n {
		t.Fatalf("committed offsets sum to %d, want %d: %v", total, n, offs)
	}
}

// TestTxnIDExpiration: an idle transactional id is removed after
// transactional.id.expiration.ms (a tombstone), also across a restart.
func TestTxnIDExpiration(t *testing.T) {
	props := map[string]string{
		"transactional.id.expiration.ms":                             "1000",
		"transaction.remove.expired.transaction.cleanup.interval.ms": "200",
	}
	for k, v := range txnProps {
		props[k] = v
	}
	c := brokertest.NewCluster(t, 1, brokertest.WithProps(props))
	co, _ := txnCoordinator(t, c.Client(), "idle")
	if _, err := txnInit(t, co, "idle", 4, 10000, -1, -1); err != nil {
		t.Fatal(err)
	}
	if d := txnDescribe(t, co, "idle"); d.ErrorCode != 0 || d.State != "Empty" {
		t.Fatalf("before expiry: %+v", d)
	}
	brokertest.Eventually(t, 30*time.Second, func() error {
		if d := txnDescribe(t, co, "idle"); !errors.Is(kerr.ErrorForCode(d.ErrorCode), kerr.TransactionalIDNotFound) {
			return fmt.Errorf("still there: %+v", d)
		}
		return nil
	})
	bid := c.IDs()[0]
	c.Stop(bid)
	c.Restart(bid)
	co2, _ := txnCoordinator(t, c.Client(), "idle")
	brokertest.Eventually(t, 30*time.Second, func() error {
		d := txnDescribe(t, co2, "idle")
		if errors.Is(kerr.ErrorForCode(d.ErrorCode), kerr.TransactionalIDNotFound) {
			return nil
		}
		return fmt.Errorf("after restart: %+v", d)
	})
}
