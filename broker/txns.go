package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/broker/replica"
	"github.com/ktoolhq/ktool/broker/txn"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// txnTopic is the internal topic of the transaction coordinator's state.
const txnTopic = "__transaction_state"

// newTxnCoordinator builds the transaction coordinator over
// __transaction_state. As with __consumer_offsets, a transactional id's
// partition is taken mod the topic's real partition count once it exists.
func newTxnCoordinator(ctx context.Context, b *Broker) *txn.Coordinator {
	b.txnMarkers = newMarkerWriter(b)
	s := b.cfg.Settings()
	n := s.TxnTopicPartitions
	if data, _, err := b.Store().Get(ctx, zkdata.TopicPath(txnTopic)); err == nil {
		if a, err := zkdata.DecodeTopicAssignment(data); err == nil && len(a.Partitions) > 0 {
			if int32(len(a.Partitions)) != n {
				b.logger.Warn("transaction.state.log.num.partitions differs from the existing __transaction_state; using the topic's count",
					"configured", n, "partitions", len(a.Partitions))
			}
			n = int32(len(a.Partitions))
		}
	}
	return txn.New(txn.Config{
		NumPartitions:  n,
		Log:            txnLog{b},
		Markers:        b.txnMarkers,
		NextProducerID: func(ctx context.Context) (int64, error) { return b.pids.next(ctx, b) },
		Codecs:         b.codecs,
		MaxTimeout:     s.TxnMaxTimeout,
		IDExpiration:   s.TxnIDExpiration,
		AbortInterval:  s.TxnAbortTimedOutInterval,
		ExpireInterval: s.TxnRemoveExpiredInterval,
		Logger:         b.logger.With("component", "txn-coordinator"),
	})
}

// onTxnLeadershipChange loads or unloads the __transaction_state partitions
// this broker now leads or no longer leads; the coordinator epoch is the
// partition's leader epoch.
func (b *Broker) onTxnLeadershipChange(updates []replica.LeaderUpdate, errs map[replica.TP]error) {
	for _, u := range updates {
		if u.TP.Topic != txnTopic || errs[u.TP] != nil {
			continue
		}
		if u.State.Leader == b.id {
			b.txns.BecomeLeader(u.TP.Partition, u.State.LeaderEpoch)
		} else {
			b.txns.Resign(u.TP.Partition)
		}
	}
}

// ensureTxnTopic creates __transaction_state on first use, as Kafka does:
// compacted, uncompressed, transaction.state.log.* partitions, replication
// factor, min ISR and segment size; never unclean. A standalone broker caps
// the replication factor (and min ISR) at one.
func (b *Broker) ensureTxnTopic(ctx context.Context) error {
	if _, _, _, ok := b.meta.topic(txnTopic); ok {
		return nil
	}
	s := b.cfg.Settings()
	rf := int64(s.TxnTopicReplicationFactor)
	live := int64(len(b.liveBrokerIDs()))
	if b.embedded != nil {
		rf = min(rf, live)
	}
	if rf < 1 || rf > live {
		return fmt.Errorf("%w: %s needs %d live brokers (transaction.state.log.replication.factor), %d are registered",
			kerr.CoordinatorNotAvailable, txnTopic, rf, live)
	}
	minISR := min(int64(s.TxnTopicMinISR), rf)
	err := b.createTopic(ctx, topicSpec{
		Name: txnTopic, Partitions: s.TxnTopicPartitions, ReplicationFactor: int16(rf),
		Configs: map[string]string{
			"cleanup.policy":                 "compact",
			"compression.type":               "uncompressed",
			"min.insync.replicas":            strconv.FormatInt(minISR, 10),
			"segment.bytes":                  strconv.FormatInt(int64(s.TxnTopicSegmentBytes), 10),
			"unclean.leader.election.enable": "false",
		},
	})
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return err
	}
	return nil
}

// txnLog gives the transaction coordinator the __transaction_state partitions.
type txnLog struct{ b *Broker }

// Append appends with acks=all: the partition's min.insync.replicas holds.
func (l txnLog) Append(ctx context.Context, partition int32, batch []byte) error {
	p, err := l.b.leaderPartition(txnTopic, partition)
	if err != nil {
		return err
	}
	res, err := p.AppendAsLeader(batch, -1)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, txnWriteTimeout)
	defer cancel()
	if err := p.WaitReplicated(wctx, res.LastOffset); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return kerr.RequestTimedOut
		}
		return err
	}
	return nil
}

func (l txnLog) Scan(ctx context.Context, partition int32, fn func([]byte) error) error {
	return l.b.scanPartition(ctx, txnTopic, partition, fn)
}

// txnWriteTimeout bounds a __transaction_state write's wait for the ISR
// (Kafka uses its request timeout the same way).
const txnWriteTimeout = 10 * time.Second

// markerWriter sends WriteTxnMarkers to the partition leaders over the
// inter-broker listener, retried until each partition acknowledges, with the
// leaders looked up again after each try. As Kafka's
// TransactionMarkerChannelManager does, the markers bound for one broker
// queue there and go together: while a request to it is in flight, the
// markers of the transactions that end meanwhile gather into the next one,
// at most maxMarkerRequestBytes of them.
type markerWriter struct {
	b       *Broker
	ctx     context.Context // ends with close: requests in flight stop
	cancel  context.CancelFunc
	mu      sync.Mutex
	clients map[int32]*protocol.Client
	queues  map[int32]*markerQueue
}

func newMarkerWriter(b *Broker) *markerWriter {
	ctx, cancel := context.WithCancel(context.Background())
	return &markerWriter{b: b, ctx: ctx, cancel: cancel, clients: map[int32]*protocol.Client{}, queues: map[int32]*markerQueue{}}
}

// markerRequestTimeout bounds one WriteTxnMarkers round trip.
const markerRequestTimeout = 30 * time.Second

// maxMarkerRequestBytes bounds the markers one WriteTxnMarkers request
// carries, by their estimated encoded size; a single transaction's markers
// for one broker go in one request however many they are.
const maxMarkerRequestBytes = 1 << 20

// markerQueue holds the markers waiting for one broker; busy while a
// goroutine sends them.
type markerQueue struct {
	pending []*markerJob
	busy    bool
}

// markerJob is one transaction's markers for the partitions one broker leads.
type markerJob struct {
	ctx  context.Context
	m    txn.MarkerSet
	tps  []txn.TP
	size int
	done chan markerResult // buffered: the sender never waits for Write
}

// markerResult is what a broker answered for a job: the partitions to try
// again, and whether it knows a newer coordinator.
type markerResult struct {
	retry  []txn.TP
	fenced bool
}

func newMarkerJob(ctx context.Context, m txn.MarkerSet, tps []txn.TP) *markerJob {
	size := 32 // producer id, epoch, committed, coordinator epoch, array lengths
	for _, tp := range tps {
		size += 4 + 2 + len(tp.Topic) // as if each partition named its topic
	}
	return &markerJob{ctx: ctx, m: m, tps: tps, size: size, done: make(chan markerResult, 1)}
}

func (w *markerWriter) client(id int32, addr string) *protocol.Client {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.clients[id]
	if c == nil || c.Addr != addr {
		if c != nil {
			_ = c.Close()
		}
		c = w.b.interBrokerClient(addr, "ktool-txn-markers")
		w.clients[id] = c
	}
	return c
}

// close closes the connections to the other brokers and stops the senders.
func (w *markerWriter) close() {
	w.cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, c := range w.clients {
		_ = c.Close()
		delete(w.clients, id)
	}
}

func (w *markerWriter) Write(ctx context.Context, m txn.MarkerSet) error {
	left := slices.Clone(m.Partitions)
	backoff := 50 * time.Millisecond
	for len(left) > 0 {
		changed := w.b.meta.Changed()
		byLeader := map[int32][]txn.TP{}
		kept := left[:0]
		for _, tp := range left {
			p, ok := w.b.meta.partition(tp.Topic, tp.Partition)
			if !ok {
				// Kafka drops the markers of a deleted topic's partitions.
				w.b.logger.Info("transaction markers: partition no longer exists; skipping it",
					"transactional_id", m.TransactionalID, "topic", tp.Topic, "partition", tp.Partition)
				continue
			}
			kept = append(kept, tp)
			if p.Leader >= 0 {
				byLeader[p.Leader] = append(byLeader[p.Leader], tp)
			}
		}
		left = kept
		if len(left) == 0 {
			break
		}
		jobs := make([]*markerJob, 0, len(byLeader))
		for leader, tps := range byLeader {
			j := newMarkerJob(ctx, m, tps)
			w.enqueue(leader, j)
			jobs = append(jobs, j)
		}
		retry := map[txn.TP]bool{}
		for _, tp := range left {
			if p, ok := w.b.meta.partition(tp.Topic, tp.Partition); ok && p.Leader < 0 {
				retry[tp] = true
			}
		}
		fenced := false
		for _, j := range jobs {
			var r markerResult
			select {
			case r = <-j.done:
			case <-ctx.Done():
				return ctx.Err()
			}
			fenced = fenced || r.fenced
			for _, tp := range r.retry {
				retry[tp] = true
			}
		}
		if fenced {
			return txn.ErrFenced
		}
		left = slices.DeleteFunc(left, func(tp txn.TP) bool { return !retry[tp] })
		if len(left) == 0 {
			break
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-changed:
			t.Stop()
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
	return nil
}

// enqueue queues j for leader and starts the queue's sender if it is idle.
func (w *markerWriter) enqueue(leader int32, j *markerJob) {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.queues[leader]
	if q == nil {
		q = &markerQueue{}
		w.queues[leader] = q
	}
	q.pending = append(q.pending, j)
	if !q.busy {
		q.busy = true
		go w.drain(leader, q)
	}
}

// drain sends leader's queued markers, as many as fit one request at a
// time, until the queue is empty. Jobs whose Write gave up are dropped; a
// job whose producer id is already in the request waits for the next one,
// since the answer names markers by producer id.
func (w *markerWriter) drain(leader int32, q *markerQueue) {
	for {
		w.mu.Lock()
		jobs, later := nextMarkerRequest(q.pending, maxMarkerRequestBytes)
		clear(q.pending)
		q.pending = append(q.pending[:0], later...)
		if len(jobs) == 0 {
			q.busy = false
			if len(q.pending) == 0 {
				delete(w.queues, leader)
			}
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		w.send(leader, jobs)
	}
}

// nextMarkerRequest splits pending jobs, oldest first, into those one
// request carries (at least one, else at most maxBytes of them) and those
// left for later; jobs whose Write gave up are dropped.
func nextMarkerRequest(pending []*markerJob, maxBytes int) (jobs, later []*markerJob) {
	pids := map[int64]bool{}
	size := 0
	for _, j := range pending {
		switch {
		case j.ctx.Err() != nil:
		case pids[j.m.ProducerID] || (len(jobs) > 0 && size+j.size > maxBytes):
			later = append(later, j)
		default:
			jobs = append(jobs, j)
			pids[j.m.ProducerID] = true
			size += j.size
		}
	}
	return jobs, later
}

// send sends jobs to leader in one WriteTxnMarkers and gives each its result.
func (w *markerWriter) send(leader int32, jobs []*markerJob) {
	retryAll := func() {
		for _, j := range jobs {
			j.done <- markerResult{retry: j.tps}
		}
	}
	addr, ok := w.b.interBrokerAddr(leader)
	if !ok {
		retryAll()
		return
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 1
	for _, j := range jobs {
		mk := kmsg.NewWriteTxnMarkersRequestMarker()
		mk.ProducerID, mk.ProducerEpoch, mk.Committed, mk.CoordinatorEpoch = j.m.ProducerID, j.m.ProducerEpoch, j.m.Commit, j.m.CoordinatorEpoch
		for _, tp := range j.tps {
			if n := len(mk.Topics); n > 0 && mk.Topics[n-1].Topic == tp.Topic {
				mk.Topics[n-1].Partitions = append(mk.Topics[n-1].Partitions, tp.Partition)
				continue
			}
			t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			t.Topic, t.Partitions = tp.Topic, []int32{tp.Partition}
			mk.Topics = append(mk.Topics, t)
		}
		req.Markers = append(req.Markers, mk)
	}
	rctx, cancel := context.WithTimeout(w.ctx, markerRequestTimeout)
	defer cancel()
	kresp, err := w.client(leader, addr).Request(rctx, req)
	if err != nil {
		if w.ctx.Err() == nil {
			w.b.logger.Info("transaction markers: request failed; retrying", "broker", leader, "markers", len(jobs), "error", err)
		}
		retryAll()
		return
	}
	resp := kresp.(*kmsg.WriteTxnMarkersResponse)
	byPID := make(map[int64]*kmsg.WriteTxnMarkersResponseMarker, len(resp.Markers))
	for i := range resp.Markers {
		byPID[resp.Markers[i].ProducerID] = &resp.Markers[i]
	}
	for _, j := range jobs {
		j.done <- w.outcome(leader, j, byPID[j.m.ProducerID])
	}
}

// outcome reads a broker's answer rm (nil when it has none) for job j.
func (w *markerWriter) outcome(leader int32, j *markerJob, rm *kmsg.WriteTxnMarkersResponseMarker) markerResult {
	acked := map[txn.TP]bool{}
	fenced := false
	if rm != nil {
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				tp := txn.TP{Topic: rt.Topic, Partition: rp.Partition}
				switch err := kerr.ErrorForCode(rp.ErrorCode); {
				case err == nil:
					acked[tp] = true
				case errors.Is(err, kerr.InvalidProducerEpoch), errors.Is(err, kerr.TransactionCoordinatorFenced):
					fenced = true
				case errors.Is(err, kerr.UnsupportedForMessageFormat):
					acked[tp] = true // as Kafka: a partition of an old message format takes no marker
				default:
					w.b.logger.Debug("transaction markers: partition not acknowledged; retrying", "topic", tp.Topic,
						"partition", tp.Partition, "broker", leader, "error", err)
				}
			}
		}
	}
	var retry []txn.TP
	for _, tp := range j.tps {
		if !acked[tp] {
			retry = append(retry, tp)
		}
	}
	return markerResult{retry: retry, fenced: fenced}
}

// verifyTxnPartition asks the transaction coordinator of txnID whether
// topic/partition is in the ongoing transaction of producer pid at epoch
// (KIP-890 part 1), before a partition leader appends a transactional batch
// that would start a transaction there. nil means it is; otherwise a kerr:
// INVALID_TXN_STATE (not added, or no transaction ongoing),
// PRODUCER_FENCED or INVALID_PRODUCER_ID_MAPPING, or a retriable
// NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE or
// CONCURRENT_TRANSACTIONS. The coordinator is asked in-process when it is
// this broker, else with AddPartitionsToTxn v4 VerifyOnly.
func (b *Broker) verifyTxnPartition(ctx context.Context, txnID string, pid int64, epoch int16, topic string, partition int32) error {
	tp := txn.TP{Topic: topic, Partition: partition}
	c := b.findCoordinator(b.interBroker.Name, 1, txnID)
	if c.ErrorCode != 0 {
		return kerr.ErrorForCode(c.ErrorCode)
	}
	if c.NodeID == b.id {
		missing, err := b.txns.Verify(txnID, pid, epoch, []txn.TP{tp})
		if err != nil {
			return err
		}
		if len(missing) > 0 {
			return kerr.InvalidTxnState
		}
		return nil
	}
	addr, ok := b.interBrokerAddr(c.NodeID)
	if !ok {
		return kerr.CoordinatorNotAvailable
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 4
	t := kmsg.NewAddPartitionsToTxnRequestTransaction()
	t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly = txnID, pid, epoch, true
	tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	tt.Topic, tt.Partitions = topic, []int32{partition}
	t.Topics = append(t.Topics, tt)
	req.Transactions = append(req.Transactions, t)
	rctx, cancel := context.WithTimeout(ctx, markerRequestTimeout)
	defer cancel()
	cl := b.interBrokerClient(addr, "ktool-txn-verify")
	defer cl.Close()
	kresp, err := cl.Request(rctx, req)
	if err != nil {
		return fmt.Errorf("%w: asking the transaction coordinator: %v", kerr.CoordinatorNotAvailable, err)
	}
	resp := kresp.(*kmsg.AddPartitionsToTxnResponse)
	if resp.ErrorCode != 0 {
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	for _, rt := range resp.Transactions {
		for _, rtt := range rt.Topics {
			for _, rp := range rtt.Partitions {
				if rt.TransactionalID == txnID && rtt.Topic == topic && rp.Partition == partition {
					return kerr.ErrorForCode(rp.ErrorCode)
				}
			}
		}
	}
	return fmt.Errorf("%w: the transaction coordinator did not answer for %s-%d", kerr.CoordinatorNotAvailable, topic, partition)
}
