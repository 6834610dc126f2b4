package broker_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
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

// etlMember is one GroupTransactSession of TestTxnGroupTransactSessionMembers,
// moving records in its own goroutine until stopped, fenced or failed.
type etlMember struct {
	id       string // transactional id
	sess     *kgo.GroupTransactSession
	hold     chan *etlHold
	stop     chan struct{}
	done     chan error
	revoked  chan struct{}           // a revocation of at least one partition
	assigned chan struct{}           // an assignment of at least one partition
	inCommit atomic.Pointer[etlHold] // a hold for the next AddOffsetsToTxn answer
	seq      int
	commits  int // transactions it committed, read once it stopped
	ctx      context.Context
}

// OnBrokerRead holds the member once its client reads an AddOffsetsToTxn
// answer while an inCommit hold is set: the client does not go on before it
// returns.
func (m *etlMember) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key != int16(kmsg.AddOffsetsToTxn) || err != nil {
		return
	}
	if h := m.inCommit.Swap(nil); h != nil {
		h.wait(m.ctx)
	}
}

// etlHold pauses a member inside its next transaction with records, after
// they are produced and before End, or with inCommit inside End, once
// AddOffsetsToTxn is answered and before TxnOffsetCommit is sent; released,
// the member ends the transaction with TryCommit.
type etlHold struct {
	inCommit  bool
	tag       string // the transaction's tag, set before paused is closed
	paused    chan struct{}
	release   chan struct{}
	ended     chan struct{}
	committed bool // End's answers, set before ended is closed
	err       error
}

// etlLog is what the members did: every transaction by its tag, whether it
// committed, and how many input records committed transactions moved.
type etlLog struct {
	mu         sync.Mutex
	committed  map[string]bool
	deliberate []string // tags aborted on purpose
	moved      atomic.Int64
}

func (l *etlLog) end(tag string, committed, deliberate bool, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.committed[tag] = committed
	if deliberate {
		l.deliberate = append(l.deliberate, tag)
	}
	if committed {
		l.moved.Add(int64(n))
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

const etlIn, etlOut, etlGroup = "etl-many-in", "etl-many-out", "etl-many"

func startEtlMember(t *testing.T, ctx context.Context, c *brokertest.Cluster, id string, log *etlLog) *etlMember {
	t.Helper()
	m := &etlMember{id: id, ctx: ctx, hold: make(chan *etlHold), stop: make(chan struct{}), done: make(chan error, 1),
		revoked: make(chan struct{}, 1), assigned: make(chan struct{}, 1)}
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(c.Addrs()...), kgo.TransactionalID(id),
		kgo.ConsumerGroup(etlGroup), kgo.ConsumeTopics(etlIn), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.TransactionTimeout(30*time.Second), kgo.DefaultProduceTopic(etlOut), kgo.RequireStableFetchOffsets(),
		kgo.HeartbeatInterval(250*time.Millisecond), kgo.MetadataMinAge(50*time.Millisecond), kgo.WithHooks(m),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, rev map[string][]int32) {
			if len(rev[etlIn]) > 0 {
				signal(m.revoked)
			}
		}),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, as map[string][]int32) {
			if len(as[etlIn]) > 0 {
				signal(m.assigned)
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	m.sess = sess
	t.Cleanup(sess.Close)
	go func() { m.done <- m.run(ctx, log) }()
	return m
}

// run polls at most 5 records, produces one output record per input record,
// value "<input>@<tag>" where tag is id#seq of the transaction, and ends the
// transaction: every fifth from the second is aborted on purpose.
func (m *etlMember) run(ctx context.Context, log *etlLog) error {
	for {
		select {
		case <-m.stop:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fs := m.sess.PollRecords(pctx, 5)
		cancel()
		for _, e := range fs.Errors() {
			if !errors.Is(e.Err, context.DeadlineExceeded) {
				return fmt.Errorf("%s: poll: %w", m.id, e.Err)
			}
		}
		if fs.NumRecords() == 0 {
			continue
		}
		m.seq++
		tag := m.id + "#" + strconv.Itoa(m.seq)
		if err := m.sess.Begin(); err != nil {
			return fmt.Errorf("%s: %w", tag, err)
		}
		var outs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			outs = append(outs, &kgo.Record{Value: []byte(string(r.Value) + "@" + tag)})
		})
		if err := m.sess.ProduceSync(ctx, outs...).FirstErr(); err != nil {
			return fmt.Errorf("%s: produce: %w", tag, err)
		}
		try := kgo.TransactionEndTry(m.seq%5 != 2)
		var h *etlHold
		select {
		case h = <-m.hold:
			h.tag, try = tag, kgo.TryCommit
			if h.inCommit {
				m.inCommit.Store(h)
			} else {
				h.wait(ctx)
			}
		default:
		}
		committed, err := m.sess.End(ctx, try)
		log.end(tag, committed, try == kgo.TryAbort, len(outs))
		if h != nil {
			h.committed, h.err = committed, err
			close(h.ended)
		}
		if err != nil {
			return fmt.Errorf("%s: end: %w", tag, err)
		}
		if committed {
			m.commits++
		}
	}
}

// wait is the member's side of a hold: it tells it is paused and waits for the release.
func (h *etlHold) wait(ctx context.Context) {
	close(h.paused)
	select {
	case <-h.release:
	case <-ctx.Done():
	}
}

// pause holds m inside its next transaction with records (see etlHold).
func (m *etlMember) pause(t *testing.T, ctx context.Context, inCommit bool) *etlHold {
	t.Helper()
	h := &etlHold{inCommit: inCommit, paused: make(chan struct{}), release: make(chan struct{}), ended: make(chan struct{})}
	select {
	case m.hold <- h:
	case err := <-m.done:
		t.Fatalf("%s stopped before pausing: %v", m.id, err)
	case <-ctx.Done():
		t.Fatalf("%s took no transaction to pause in", m.id)
	}
	waitSignal(t, ctx, h.paused, m.id+" pausing")
	return h
}

// end releases a held transaction and returns what its End answered.
func (h *etlHold) end(t *testing.T, ctx context.Context) (bool, error) {
	t.Helper()
	close(h.release)
	waitSignal(t, ctx, h.ended, h.tag+" ending")
	return h.committed, h.err
}

// leave stops m between transactions and closes its session (LeaveGroup).
func (m *etlMember) leave(t *testing.T, ctx context.Context) {
	t.Helper()
	close(m.stop)
	select {
	case err := <-m.done:
		if err != nil {
			t.Fatalf("%s: %v", m.id, err)
		}
	case <-ctx.Done():
		t.Fatalf("%s did not stop", m.id)
	}
	m.sess.Close()
}

func waitSignal(t *testing.T, ctx context.Context, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatalf("timed out: %s", what)
	}
}

// TestTxnGroupTransactSessionMembers: GroupTransactSession members of one
// group (cooperative-sticky), each its own transactional id, move every input
// record to the output exactly once on three brokers while a member leaves and
// others join (one loses a partition in the middle of a transaction, which the
// session aborts), every fifth transaction is aborted on purpose, and a zombie
// is fenced: a producer with a live member's transactional id starts while
// that member is inside its commit (AddOffsetsToTxn answered, TxnOffsetCommit
// not sent), whose commit then fails with INVALID_PRODUCER_EPOCH or
// PRODUCER_FENCED and whose records stay aborted. read_committed sees each
// input once and no record of a transaction that did not commit; the group's
// offsets reach the input's end.
func TestTxnGroupTransactSessionMembers(t *testing.T) {
	c := brokertest.NewCluster(t, 3, brokertest.WithProps(txnProps))
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	adm := c.Admin()
	for topic, parts := range map[string]int32{etlIn: 6, etlOut: 3, "etl-many-fence": 1} {
		if _, err := adm.CreateTopic(ctx, parts, 3, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	// The input comes in four phases of 150 records, 25 a partition, so
	// every member has records when it is to be paused.
	const phase, phases = 150, 4
	in := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	next := 0
	produce := func() {
		t.Helper()
		var rs []*kgo.Record
		for range phase {
			rs = append(rs, &kgo.Record{Topic: etlIn, Partition: int32(next % 6), Value: []byte(strconv.Itoa(next))})
			next++
		}
		if err := in.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	log := &etlLog{committed: map[string]bool{}}
	// waitMembers waits for the newcomers' first partitions and for the group
	// to be Stable with members members.
	waitMembers := func(members int, newcomers ...*etlMember) {
		t.Helper()
		for _, m := range newcomers {
			waitSignal(t, ctx, m.assigned, m.id+" assigned")
		}
		brokertest.Eventually(t, 20*time.Second, func() error {
			d, err := describeGroup(ctx, adm, etlGroup)
			if err != nil {
				return err
			}
			if d.State != "Stable" || len(d.Members) != members {
				return fmt.Errorf("group %s with %d members, want Stable with %d", d.State, len(d.Members), members)
			}
			return nil
		})
	}

	m1 := startEtlMember(t, ctx, c, "etl-many-1", log)
	m2 := startEtlMember(t, ctx, c, "etl-many-2", log)
	m3 := startEtlMember(t, ctx, c, "etl-many-3", log)
	waitMembers(3, m1, m2, m3)
	produce()

	// A member leaves: m1 and m3 take m2's partitions (3 each). m4 joins
	// while m1 is inside a transaction, and the balancer moves one of m1's
	// partitions to m4: the session must abort that transaction.
	m2.leave(t, ctx)
	waitMembers(2)
	produce()
	h := m1.pause(t, ctx, false)
	select {
	case <-m1.revoked:
	default:
	}
	m4 := startEtlMember(t, ctx, c, "etl-many-4", log)
	waitSignal(t, ctx, m1.revoked, "m1 revoked a partition")
	if committed, err := h.end(t, ctx); committed || err != nil {
		t.Fatalf("%s, revoked a partition inside the transaction, ended with committed=%v err=%v; want an abort", h.tag, committed, err)
	}
	revokedTag := h.tag
	waitMembers(3, m4)

	// A zombie: m3 is inside its commit when a producer with its
	// transactional id starts (InitProducerId bumps the epoch and aborts the
	// open transaction); m3's TxnOffsetCommit and EndTxn must be fenced.
	produce()
	h = m3.pause(t, ctx, true)
	fencer := txnProducer(t, c, m3.id)
	if err := produceTxn(ctx, fencer, "etl-many-fence", "fence", 1, true); err != nil {
		t.Fatal(err)
	}
	fencer.Close()
	zc, err := h.end(t, ctx)
	if zc || (!errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch)) {
		t.Fatalf("the zombie %s ended with committed=%v err=%v; want PRODUCER_FENCED", h.tag, zc, err)
	}
	zombie := h.tag
	select {
	case err := <-m3.done:
		if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
			t.Fatalf("the zombie stopped with %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the zombie did not stop")
	}
	m3.sess.Close()
	// The transactional id lives on in a new session.
	m3b := startEtlMember(t, ctx, c, m3.id, log)
	m3b.seq = 100 // tags apart from the zombie's
	waitMembers(3, m3b)
	produce()

	const n = phase * phases
	brokertest.Eventually(t, 20*time.Second, func() error {
		if moved := log.moved.Load(); moved < n {
			return fmt.Errorf("%d of %d records moved", moved, n)
		}
		return nil
	})
	for _, m := range []*etlMember{m1, m4, m3b} {
		m.leave(t, ctx)
	}
	if moved := log.moved.Load(); moved != n {
		t.Fatalf("committed transactions moved %d records, want %d", moved, n)
	}

	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.deliberate) == 0 {
		t.Fatal("no transaction was aborted on purpose")
	}
	if m3b.commits == 0 {
		t.Fatal("the new session of the fenced id committed nothing")
	}
	seen := map[int]int{}
	got := consumeAll(t, c, etlOut, kgo.ReadCommitted(), n)
	for _, v := range got {
		i, tag, _ := strings.Cut(v, "@")
		if ok, ended := log.committed[tag]; !ok {
			t.Fatalf("read_committed shows %q of a transaction that did not commit (ended: %v)", v, ended)
		}
		k, err := strconv.Atoi(i)
		if err != nil {
			t.Fatalf("output %q", v)
		}
		seen[k]++
	}
	for i := range n {
		if seen[i] != 1 {
			t.Fatalf("output has input %d %d times (%d records in all)", i, seen[i], len(got))
		}
	}
	if len(got) != n {
		t.Fatalf("output has %d records, want %d", len(got), n)
	}
	// The aborted records are in the log: read_uncommitted shows them.
	written := map[string]bool{}
	for _, v := range consumeAll(t, c, etlOut, kgo.ReadUncommitted(), n+1) {
		_, tag, _ := strings.Cut(v, "@")
		written[tag] = true
	}
	for _, tag := range append([]string{revokedTag, zombie}, log.deliberate...) {
		if !written[tag] {
			t.Fatalf("read_uncommitted lacks the aborted transaction %s", tag)
		}
	}

	brokertest.Eventually(t, 10*time.Second, func() error {
		ends, err := adm.ListEndOffsets(ctx, etlIn)
		if err != nil {
			return err
		}
		offs, err := committed(ctx, adm, etlGroup)
		if err != nil {
			return err
		}
		var bad []string
		ends.Each(func(o kadm.ListedOffset) {
			if at := offs[fmt.Sprintf("%s/%d", o.Topic, o.Partition)]; at != o.Offset {
				bad = append(bad, fmt.Sprintf("%d: committed %d, end %d", o.Partition, at, o.Offset))
			}
		})
		if len(bad) > 0 {
			return fmt.Errorf("group offsets behind the input: %v", bad)
		}
		return nil
	})
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
