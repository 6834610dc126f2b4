package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	txnTopic   = "chaos-txn"
	txnID      = "chaos-txn"
	txnSize    = 5 // records per transaction
	txnTimeout = 10 * time.Second
	// txnStatePartitions is transaction.state.log.num.partitions of the
	// cluster.
	txnStatePartitions = 10
	// lsoBound is the longest the last stable offset may stay below the
	// high watermark at one value: the transaction timeout, the abort
	// interval of the cluster (1 s), the longest fault (session timeout + 3
	// s), a failover (the session timeout) and as much again for the
	// markers and a loaded machine. A transaction left open by a fault is
	// aborted by its timeout well within it; a hanging one never is.
	lsoBound = 2 * (txnTimeout + time.Second + sessionTimeout + 3*time.Second + sessionTimeout)
)

// txnFault is one kind of fault of TestTxnFaults: apply hits the transaction
// coordinator of txnID or the leader of the transactional partition.
type txnFault struct {
	name        string
	coordinator bool
	apply       func(t *testing.T, c *cluster, victim int32) error
}

// txnFaults are hit in turn; the first six are each kind of fault (SIGKILL
// with an immediate restart, SIGSTOP and a ZooKeeper cut past the session
// timeout) on the coordinator and on the leader.
var txnFaults = []txnFault{
	{"SIGKILL coordinator", true, killRestart},
	{"SIGSTOP leader", false, pauseFor(sessionTimeout + 3*time.Second)},
	{"ZK blackhole coordinator", true, cutFor(proxyBlackhole, sessionTimeout+3*time.Second)},
	{"SIGKILL leader", false, killRestart},
	{"SIGSTOP coordinator", true, pauseFor(sessionTimeout + 3*time.Second)},
	{"ZK reset leader", false, cutFor(proxyReset, sessionTimeout+3*time.Second)},
	{"ZK reset coordinator", true, cutFor(proxyReset, sessionTimeout+3*time.Second)},
	{"ZK blackhole leader", false, cutFor(proxyBlackhole, sessionTimeout+3*time.Second)},
}

// txnLog is what the transactional producer did: every transaction it
// began, the ones it asked to commit, and the ones whose commit was
// acknowledged.
type txnLog struct {
	mu          sync.Mutex
	commitTried map[int]bool
	committed   map[int]bool
	aborted     int
}

func (l *txnLog) committedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.committed)
}

// TestTxnFaults: a transactional producer commits two transactions of known
// content and aborts the third, over and over, while a read_committed
// consumer follows. The transaction coordinator of the producer's id (found
// with FindCoordinator key type 1) and the transactional partition's leader
// (which the coordinator's markers must reach) are SIGKILLed and restarted,
// SIGSTOPped and cut from ZooKeeper in turn (txnFaults), and a monitor polls
// ListOffsets with isolation level 1 throughout. Just before each fault
// another producer, of an id with the same coordinator, writes a
// transaction and dies without ending it: the coordinator, across the fault,
// must abort it when its timeout passes. It checks that:
//   - no record of a transaction the producer never asked to commit, or of
//     an abandoned one, was read;
//   - every transaction read was read whole, once and in order, and offsets
//     never repeat (no duplicates);
//   - every acknowledged commit was read;
//   - the last stable offset never stayed below the high watermark at one
//     value for longer than lsoBound, and reaches the high watermark once
//     the producer stops (no transaction hangs past its timeout);
//   - the LSO passed every abandoned transaction no later than lsoBound -
//     txnTimeout after its timeout.
//
// CI runs the first six faults (each kind on each role);
// KTOOL_CHAOS_TXN_FAULTS=N runs N.
//
//	KTOOL_CHAOS_TXN_FAULTS=64 go test ./test/chaos -run TestTxnFaults -v -timeout 60m
func TestTxnFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level chaos test: runs without -short")
	}
	t.Parallel()
	faults := int(envInt(t, "KTOOL_CHAOS_TXN_FAULTS", 6))
	ctx := testContext(t, time.Duration(faults)*time.Minute+3*time.Minute)
	// Preferred leaders come back within seconds of a fault, so that each
	// fault starts with the coordinator and the leader where
	// txnTopicAssignment put them: on different brokers.
	c := newCluster(t, 3, "/chaostxn", "transaction.state.log.replication.factor=3", "transaction.state.log.min.isr=2",
		fmt.Sprintf("transaction.state.log.num.partitions=%d", txnStatePartitions), "transaction.abort.timed.out.transaction.cleanup.interval.ms=1000",
		"leader.imbalance.check.interval.seconds=2", "leader.imbalance.per.broker.percentage=0")
	adm := c.admin()
	coordReplicas, leaderReplicas := txnTopicAssignment(ctx, t, c, adm)
	t.Logf("__transaction_state-%d (the coordinator of %s) on %v, %s-0 on %v", txnStatePartition(txnID), txnID, coordReplicas, txnTopic, leaderReplicas)

	log := &txnLog{commitTried: map[int]bool{}, committed: map[int]bool{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { produceTxns(ctx, c, log, stop) })
	stopProducing := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(stopProducing)

	type read struct {
		offset int64
		value  string
	}
	var seen []read
	var seenMu sync.Mutex
	cons := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{txnTopic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	consCtx, stopConsuming := context.WithCancel(ctx)
	var consWG sync.WaitGroup
	consWG.Go(func() {
		for consCtx.Err() == nil {
			fs := cons.PollFetches(consCtx)
			seenMu.Lock()
			fs.EachRecord(func(r *kgo.Record) { seen = append(seen, read{r.Offset, string(r.Value)}) })
			seenMu.Unlock()
		}
	})
	defer func() { stopConsuming(); consWG.Wait() }()

	lso := &lsoMonitor{adm: adm}
	abandonedIDs := sameCoordinatorIDs(txnID, faults)
	monCtx, stopMonitor := context.WithCancel(ctx)
	var monWG sync.WaitGroup
	monWG.Go(func() { lso.run(monCtx) })
	defer func() { stopMonitor(); monWG.Wait() }()

	if err := poll(ctx, time.Minute, func(context.Context) error {
		if n := log.committedCount(); n < 2 {
			return fmt.Errorf("%d transactions committed", n)
		}
		return nil
	}); err != nil {
		t.Fatalf("the producer never got going: %v", err)
	}
	for i := 0; i < faults && !t.Failed(); i++ {
		f := txnFaults[i%len(txnFaults)]
		coord, err := txnCoordinator(ctx, c, txnID)
		if err != nil {
			t.Fatalf("fault %d: %v", i+1, err)
		}
		m, err := adm.Metadata(ctx, txnTopic)
		if err != nil {
			t.Fatalf("fault %d: metadata: %v", i+1, err)
		}
		leader := m.Topics[txnTopic].Partitions[0].Leader
		victim := leader
		if f.coordinator {
			victim = coord
		}
		role := fmt.Sprintf("broker %d; coordinator %d, leader %d", victim, coord, leader)
		lso.fault(fmt.Sprintf("fault %d (%s, %s)", i+1, f.name, role))
		before := log.committedCount()
		start := time.Now()
		first, began, err := abandonTxn(ctx, c, abandonedIDs[i], i)
		if err != nil {
			t.Fatalf("fault %d: abandoning a transaction: %v", i+1, err)
		}
		lso.watch(first, began.Add(txnTimeout), fmt.Sprintf("fault %d (%s)", i+1, f.name))
		if err := f.apply(t, c, victim); err != nil {
			t.Fatalf("fault %d (%s, %s): %v", i+1, f.name, role, err)
		}
		if err := poll(ctx, 2*time.Minute, func(ctx context.Context) error {
			if err := c.fullISR(ctx, txnTopic, 1); err != nil {
				return err
			}
			if err := c.fullISR(ctx, "__transaction_state", txnStatePartitions); err != nil {
				return err
			}
			return preferredLeaders(ctx, c, adm, coordReplicas[0], leaderReplicas[0])
		}); err != nil {
			t.Fatalf("fault %d (%s, %s): ISRs not full again, or leaders not back on their preferred replicas: %v", i+1, f.name, role, err)
		}
		if err := poll(ctx, 2*time.Minute, func(context.Context) error {
			if n := log.committedCount(); n < before+2 {
				return fmt.Errorf("%d transactions committed since the fault began", n-before)
			}
			return nil
		}); err != nil {
			t.Fatalf("fault %d (%s, %s): the producer made no progress: %v", i+1, f.name, role, err)
		}
		t.Logf("fault %d/%d: %s (%s): healed and 2 more commits after %v; %d committed in all; the LSO stayed below the high watermark at one value for up to %v",
			i+1, faults, f.name, role, time.Since(start).Round(time.Millisecond), log.committedCount(), lso.takeWorst().Round(time.Millisecond))
	}
	stopProducing()

	// No transaction hangs: the LSO reaches the high watermark once the
	// producer stopped (an open one is aborted by its timeout).
	if err := poll(ctx, lsoBound, func(ctx context.Context) error {
		l, h, err := lso.offsets(ctx)
		if err != nil {
			return err
		}
		// The reading that ends the wait counts for the abandoned
		// transactions too: CI once saw the last one aborted between the
		// monitor's readings and this one, and reported it never aborted.
		lso.observe(l, h, time.Now())
		if l != h {
			return fmt.Errorf("last stable offset %d, high watermark %d", l, h)
		}
		return nil
	}); err != nil {
		t.Errorf("a transaction hangs: %v", err)
	}
	stopMonitor()
	monWG.Wait()
	var lates []time.Duration
	for _, a := range lso.abandonedTxns() {
		if a.ended.IsZero() {
			t.Errorf("the transaction abandoned before %s (first offset %d) was never aborted: the LSO never passed it", a.during, a.offset)
			continue
		}
		late := a.ended.Sub(a.expiry)
		if late > lsoBound-txnTimeout {
			t.Errorf("the transaction abandoned before %s (first offset %d) was aborted %v after its timeout, beyond %v", a.during, a.offset, late.Round(time.Millisecond), lsoBound-txnTimeout)
		}
		lates = append(lates, late)
	}
	slices.Sort(lates)
	if len(lates) > 0 {
		t.Logf("abandoned transactions were aborted after their timeout by (the LSO passed them): median %v, worst %v (of %d)",
			lates[len(lates)/2].Round(time.Millisecond), lates[len(lates)-1].Round(time.Millisecond), len(lates))
	}
	worst, at, during := lso.worstStall()
	t.Logf("longest the last stable offset stayed at one value below the high watermark: %v (offset %d, %s; bound %v)",
		worst.Round(time.Millisecond), at, during, lsoBound)
	if worst > lsoBound {
		t.Errorf("the last stable offset stayed at %d below the high watermark for %v (%s), beyond %v: a transaction hung past its timeout",
			at, worst.Round(time.Millisecond), during, lsoBound)
	}

	log.mu.Lock()
	defer log.mu.Unlock()
	if err := poll(ctx, time.Minute, func(context.Context) error {
		seenMu.Lock()
		defer seenMu.Unlock()
		got := map[int]bool{}
		for _, r := range seen {
			var k, i int
			if _, err := fmt.Sscanf(r.value, "txn-%d-%d", &k, &i); err == nil {
				got[k] = true
			}
		}
		for k := range log.committed {
			if !got[k] {
				return fmt.Errorf("committed transaction %d not seen yet (%d of %d seen)", k, len(got), len(log.committed))
			}
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	stopConsuming()
	consWG.Wait()
	values := make([]string, len(seen))
	for i, r := range seen {
		values[i] = r.value
		if i > 0 && r.offset <= seen[i-1].offset {
			t.Errorf("offset %d read after offset %d", r.offset, seen[i-1].offset)
		}
	}
	if err := checkTxnReads(values, func(k int) bool { return !log.commitTried[k] }); err != nil {
		t.Error(err)
	}
	t.Logf("%d faults; %d transactions committed, %d aborted, %d more ended by a fault; %d records read committed",
		faults, len(log.committed), log.aborted, len(log.commitTried)-len(log.committed), len(seen))
}

// produceTxns commits two transactions and aborts the third until stop is
// closed. A transaction whose end fails has an unknown outcome; the
// producer is closed and a new one of the same id fences it and ends the
// transaction.
func produceTxns(ctx context.Context, c *cluster, log *txnLog, stop chan struct{}) {
	var cl *kgo.Client
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	for k := 0; ; k++ {
		select {
		case <-stop:
			return
		default:
		}
		if cl == nil {
			cl = c.client(kgo.TransactionalID(txnID), kgo.DefaultProduceTopic(txnTopic),
				kgo.TransactionTimeout(txnTimeout), kgo.RecordDeliveryTimeout(20*time.Second))
		}
		commit := k%3 != 2
		tried, err := runTxn(ctx, cl, k, commit)
		log.mu.Lock()
		if tried {
			log.commitTried[k] = true
		}
		switch {
		case err == nil && commit:
			log.committed[k] = true
		case err == nil:
			log.aborted++
		}
		log.mu.Unlock()
		if err != nil {
			cl.Close()
			cl = nil
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

// runTxn produces transaction k and ends it: commit if asked and every
// record was acknowledged, abort otherwise. tried says whether it asked to
// commit.
func runTxn(ctx context.Context, cl *kgo.Client, k int, commit bool) (tried bool, err error) {
	if err := cl.BeginTransaction(); err != nil {
		return false, err
	}
	var errs []error
	for i := range txnSize {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "txn-%d-%d", k, i)}).FirstErr(); err != nil {
			errs = append(errs, err)
			break
		}
	}
	tried = commit && len(errs) == 0
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(tried)); err != nil {
		errs = append(errs, err)
	}
	return tried, errors.Join(errs...)
}

// txnStatePartition is the partition of __transaction_state that holds id,
// and whose leader is its coordinator: abs(hashCode(id)) mod the partition
// count, with Java's String.hashCode and Kafka's Utils.abs.
func txnStatePartition(id string) int32 {
	var h int32
	for _, r := range id {
		h = 31*h + r
	}
	return (h & 0x7fffffff) % txnStatePartitions
}

// txnTopicAssignment waits for the coordinator of txnID (FindCoordinator
// creates __transaction_state) and creates txnTopic with one partition whose
// replicas are those of txnID's __transaction_state partition in reverse
// order: the preferred leaders differ, and a failover of either moves it to
// a broker that is not the other's. It returns both replica lists,
// preferred leader first.
func txnTopicAssignment(ctx context.Context, t *testing.T, c *cluster, adm *kadm.Client) (coord, leader []int32) {
	t.Helper()
	if err := poll(ctx, time.Minute, func(ctx context.Context) error {
		if _, err := txnCoordinator(ctx, c, txnID); err != nil {
			return err
		}
		return c.fullISR(ctx, "__transaction_state", txnStatePartitions)
	}); err != nil {
		t.Fatal(err)
	}
	m, err := adm.Metadata(ctx, "__transaction_state")
	if err != nil {
		t.Fatal(err)
	}
	coord = m.Topics["__transaction_state"].Partitions[txnStatePartition(txnID)].Replicas
	leader = slices.Clone(coord)
	slices.Reverse(leader)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = txnTopic
	rt.NumPartitions = -1
	rt.ReplicationFactor = -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Replicas = leader
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, c.client())
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("create %s on %v: %v", txnTopic, leader, err)
	}
	if err := poll(ctx, time.Minute, func(ctx context.Context) error { return c.fullISR(ctx, txnTopic, 1) }); err != nil {
		t.Fatal(err)
	}
	return coord, leader
}

// preferredLeaders is nil when the coordinator of txnID is coord and the
// leader of txnTopic-0 is leader.
func preferredLeaders(ctx context.Context, c *cluster, adm *kadm.Client, coord, leader int32) error {
	got, err := txnCoordinator(ctx, c, txnID)
	if err != nil {
		return err
	}
	m, err := adm.Metadata(ctx, txnTopic)
	if err != nil {
		return err
	}
	if l := m.Topics[txnTopic].Partitions[0].Leader; got != coord || l != leader {
		return fmt.Errorf("coordinator %d, leader %d; preferred %d and %d", got, l, coord, leader)
	}
	return nil
}

// sameCoordinatorIDs are n transactional ids other than id with the same
// coordinator partition.
func sameCoordinatorIDs(id string, n int) []string {
	var ids []string
	for i := 0; len(ids) < n; i++ {
		if a := fmt.Sprintf("chaos-abandoned-%d", i); txnStatePartition(a) == txnStatePartition(id) {
			ids = append(ids, a)
		}
	}
	return ids
}

// abandonTxn writes txnSize records "abandoned-N-i" to txnTopic in a
// transaction of id and closes its producer without ending it, as a
// producer that dies would: only the coordinator's timeout (or a fault
// taking over the coordinator) can abort it, and until then the LSO stays
// at its first record.
//
// It returns the offset of its first record and the time before the
// transaction began: the coordinator's timeout runs from a later time.
func abandonTxn(ctx context.Context, c *cluster, id string, n int) (first int64, began time.Time, err error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.TransactionalID(id), kgo.DefaultProduceTopic(txnTopic),
		kgo.TransactionTimeout(txnTimeout), kgo.RecordDeliveryTimeout(20*time.Second))
	if err != nil {
		return 0, time.Time{}, err
	}
	defer cl.Close()
	began = time.Now()
	if err := cl.BeginTransaction(); err != nil {
		return 0, began, err
	}
	for i := range txnSize {
		r, err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "abandoned-%d-%d", n, i)}).First()
		if err != nil {
			return 0, began, err
		}
		if i == 0 {
			first = r.Offset
		}
	}
	return first, began, nil
}

// txnCoordinator asks the brokers in turn for the transaction coordinator of
// id (FindCoordinator, key type 1).
func txnCoordinator(ctx context.Context, c *cluster, id string) (int32, error) {
	var errs []error
	for _, b := range c.ids() {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = 1
		req.CoordinatorKey = id
		req.CoordinatorKeys = []string{id}
		rctx, cancel := context.WithTimeout(ctx, attemptTimeout)
		resp, err := req.RequestWith(rctx, c.brokerClient(b))
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("broker %d: %w", b, err))
			continue
		}
		node, code := resp.NodeID, resp.ErrorCode
		if len(resp.Coordinators) == 1 {
			node, code = resp.Coordinators[0].NodeID, resp.Coordinators[0].ErrorCode
		}
		if err := kerr.ErrorForCode(code); err != nil {
			errs = append(errs, fmt.Errorf("broker %d: %w", b, err))
			continue
		}
		return node, nil
	}
	return -1, fmt.Errorf("no coordinator for transactional id %s: %w", id, errors.Join(errs...))
}

// lsoMonitor polls the last stable offset (ListOffsets, isolation level 1)
// and the high watermark of the transactional partition every 200 ms and
// keeps the longest time the LSO stayed at one value below the high
// watermark, counting the time it could not be read at all.
type lsoMonitor struct {
	adm *kadm.Client

	mu          sync.Mutex
	during      string    // the fault under way, or the last one
	value       int64     // the LSO last read
	since       time.Time // when it was first read at value below the high watermark; zero when it was at the high watermark
	sinceDuring string
	worst       time.Duration
	worstAt     int64
	worstDuring string
	recent      time.Duration // the worst since takeWorst
	abandoned   []abandonedTxn
}

// abandonedTxn is a transaction abandoned by its producer: the LSO must
// pass its first offset once the coordinator aborts it.
type abandonedTxn struct {
	offset int64
	expiry time.Time // when its timeout passed at the latest
	during string    // the fault it was abandoned before
	ended  time.Time // when the LSO was first read past offset; zero until then
}

// watch follows the abandoned transaction whose first record is at offset.
func (m *lsoMonitor) watch(offset int64, expiry time.Time, during string) {
	m.mu.Lock()
	m.abandoned = append(m.abandoned, abandonedTxn{offset: offset, expiry: expiry, during: during})
	m.mu.Unlock()
}

// abandonedTxns are the watched transactions.
func (m *lsoMonitor) abandonedTxns() []abandonedTxn {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.abandoned)
}

// fault names the fault that begins now, for the report.
func (m *lsoMonitor) fault(name string) {
	m.mu.Lock()
	m.during = name
	m.mu.Unlock()
}

// offsets reads the last stable offset and the high watermark of
// txnTopic-0.
func (m *lsoMonitor) offsets(ctx context.Context) (lso, hw int64, err error) {
	l, err := m.adm.ListCommittedOffsets(ctx, txnTopic)
	if err != nil {
		return 0, 0, err
	}
	h, err := m.adm.ListEndOffsets(ctx, txnTopic)
	if err != nil {
		return 0, 0, err
	}
	lo, _ := l.Lookup(txnTopic, 0)
	ho, _ := h.Lookup(txnTopic, 0)
	if lo.Err != nil || ho.Err != nil {
		return 0, 0, errors.Join(lo.Err, ho.Err)
	}
	return lo.Offset, ho.Offset, nil
}

func (m *lsoMonitor) run(ctx context.Context) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		lso, hw, err := m.offsets(actx)
		cancel()
		if err == nil {
			m.observe(lso, hw, time.Now())
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// observe records one reading of the last stable offset and the high
// watermark taken at now: the abandoned transactions it passed, and how long
// it has stayed at one value below the high watermark.
func (m *lsoMonitor) observe(lso, hw int64, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.abandoned {
		if a := &m.abandoned[i]; a.ended.IsZero() && lso > a.offset {
			a.ended = now
		}
	}
	switch {
	case lso >= hw:
		m.since = time.Time{}
	case lso != m.value || m.since.IsZero():
		m.value, m.since, m.sinceDuring = lso, now, m.during
	}
	if !m.since.IsZero() {
		d := now.Sub(m.since)
		if d > m.worst {
			m.worst, m.worstAt, m.worstDuring = d, m.value, m.sinceDuring
		}
		m.recent = max(m.recent, d)
	}
}

// takeWorst is the longest the LSO stayed at one value below the high
// watermark since the last call.
func (m *lsoMonitor) takeWorst() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.recent
	m.recent = 0
	return w
}

// worstStall is the longest the LSO stayed at one value below the high
// watermark, that value, and the fault under way when it got there.
func (m *lsoMonitor) worstStall() (time.Duration, int64, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	during := m.worstDuring
	if during == "" {
		during = "before the first fault"
	}
	return m.worst, m.worstAt, during
}

// checkTxnReads checks what a read_committed consumer read: no record of a
// transaction for which never(k) holds, every transaction whole (records
// 0..txnSize-1 in a row), each once, and transactions in the order they
// were produced.
func checkTxnReads(seen []string, never func(k int) bool) error {
	last := -1
	for i := 0; i < len(seen); {
		var k, r int
		if strings.HasPrefix(seen[i], "abandoned-") {
			return fmt.Errorf("read record %q of a transaction that was abandoned and never committed", seen[i])
		}
		if _, err := fmt.Sscanf(seen[i], "txn-%d-%d", &k, &r); err != nil {
			return fmt.Errorf("record %d: %q", i, seen[i])
		}
		if never(k) {
			return fmt.Errorf("read record %q of transaction %d, which was never committed", seen[i], k)
		}
		if k <= last {
			return fmt.Errorf("transaction %d read after %d", k, last)
		}
		for j := range txnSize {
			want := fmt.Sprintf("txn-%d-%d", k, j)
			if i+j >= len(seen) || seen[i+j] != want {
				return fmt.Errorf("transaction %d torn at record %d: %s", k, j, strings.Join(seen[i:min(i+txnSize, len(seen))], " "))
			}
		}
		last = k
		i += txnSize
	}
	return nil
}
