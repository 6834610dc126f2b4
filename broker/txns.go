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
	b.txnMarkers = &markerWriter{b: b, clients: map[int32]*protocol.Client{}}
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
// inter-broker listener: one request per leader broker, retried until each
// partition acknowledges, with the leaders looked up again after each try.
type markerWriter struct {
	b       *Broker
	mu      sync.Mutex
	clients map[int32]*protocol.Client
}

// markerRequestTimeout bounds one WriteTxnMarkers round trip.
const markerRequestTimeout = 30 * time.Second

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

// close closes the connections to the other brokers.
func (w *markerWriter) close() {
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
		type result struct {
			retry  []txn.TP
			fenced bool
		}
		results := make(chan result, len(byLeader))
		for leader, tps := range byLeader {
			go func() {
				retry, fenced := w.send(ctx, leader, m, tps)
				results <- result{retry, fenced}
			}()
		}
		retry := map[txn.TP]bool{}
		for _, tp := range left {
			if p, ok := w.b.meta.partition(tp.Topic, tp.Partition); ok && p.Leader < 0 {
				retry[tp] = true
			}
		}
		fenced := false
		for range byLeader {
			r := <-results
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

// send sends one WriteTxnMarkers to leader for tps and returns those to retry.
func (w *markerWriter) send(ctx context.Context, leader int32, m txn.MarkerSet, tps []txn.TP) ([]txn.TP, bool) {
	addr, ok := w.b.interBrokerAddr(leader)
	if !ok {
		return tps, false
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 1
	mk := kmsg.NewWriteTxnMarkersRequestMarker()
	mk.ProducerID, mk.ProducerEpoch, mk.Committed, mk.CoordinatorEpoch = m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch
	for _, tp := range tps {
		if n := len(mk.Topics); n > 0 && mk.Topics[n-1].Topic == tp.Topic {
			mk.Topics[n-1].Partitions = append(mk.Topics[n-1].Partitions, tp.Partition)
			continue
		}
		t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		t.Topic, t.Partitions = tp.Topic, []int32{tp.Partition}
		mk.Topics = append(mk.Topics, t)
	}
	req.Markers = append(req.Markers, mk)
	rctx, cancel := context.WithTimeout(ctx, markerRequestTimeout)
	defer cancel()
	kresp, err := w.client(leader, addr).Request(rctx, req)
	if err != nil {
		if ctx.Err() == nil {
			w.b.logger.Info("transaction markers: request failed; retrying", "broker", leader, "error", err)
		}
		return tps, false
	}
	resp := kresp.(*kmsg.WriteTxnMarkersResponse)
	acked := map[txn.TP]bool{}
	fenced := false
	for _, rm := range resp.Markers {
		if rm.ProducerID != m.ProducerID {
			continue
		}
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
	for _, tp := range tps {
		if !acked[tp] {
			retry = append(retry, tp)
		}
	}
	return retry, fenced
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
