package broker

// KIP-890 part 1 on produce: a transactional batch whose producer has no open
// transaction at the partition would start one there. Before appending it the
// leader asks the producer's transaction coordinator whether the partition is
// in the producer's ongoing transaction (txcoord's verifyTxnPartition:
// AddPartitionsToTxn v4 VerifyOnly) and appends only when it is, and when no
// marker for the producer landed meanwhile (the log's verification token).
// Otherwise the batch is refused: INVALID_TXN_STATE when the partition is not
// in the transaction, the coordinator's fencing error as it is, and
// NOT_ENOUGH_REPLICAS, which every producer retries, while the coordinator is
// unavailable. So a retried or stray produce cannot start a transaction that
// no coordinator will ever end (a hanging transaction), nor reopen one after
// its marker.

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	klog "github.com/ktoolhq/ktool/broker/log"
	"github.com/ktoolhq/ktool/broker/replica"
	"github.com/ktoolhq/ktool/internal/acl"
	"github.com/ktoolhq/ktool/internal/batch"
)

// txnCheck is the verification of one partition's transactional batch.
type txnCheck struct {
	v   klog.TxnVerification
	err error // the coordinator's refusal, nil when verified
}

type txnNeed struct {
	tp    replica.TP
	pid   int64
	epoch int16
	token int64
}

// txnVerificationsNeeded lists the partitions of req whose transactional
// batch would open a transaction, with the log's token taken now.
func (b *Broker) txnVerificationsNeeded(rc *reqCtx, req *kmsg.ProduceRequest) []txnNeed {
	var need []txnNeed
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			h, err := batch.ParseHeader(p.Records)
			if err != nil || !h.Transactional() || h.ProducerID < 0 {
				continue
			}
			part := b.replicas.Get(replica.TP{Topic: t.Topic, Partition: p.Partition})
			if part == nil || !part.IsLeader() {
				continue // refused by the append
			}
			token, ok := part.Log().TxnVerificationToken(h.ProducerID, h.ProducerEpoch)
			if !ok {
				continue
			}
			if req.TransactionID == nil || !rc.allowed(b, acl.OpWrite, acl.ResourceTransactionalID, *req.TransactionID) {
				// Refused without asking: no transactional id to verify (or none
				// the principal may use; produce answers that itself).
				need = append(need, txnNeed{tp: replica.TP{Topic: t.Topic, Partition: p.Partition}, pid: -1, token: token})
				continue
			}
			need = append(need, txnNeed{tp: replica.TP{Topic: t.Topic, Partition: p.Partition}, pid: h.ProducerID, epoch: h.ProducerEpoch, token: token})
		}
	}
	return need
}

// verifyTxnProduce asks the coordinator about each partition of need.
func (b *Broker) verifyTxnProduce(ctx context.Context, req *kmsg.ProduceRequest, need []txnNeed) map[replica.TP]txnCheck {
	checks := make(map[replica.TP]txnCheck, len(need))
	for _, n := range need {
		c := txnCheck{v: klog.TxnVerification{Token: n.token}}
		if n.pid < 0 {
			c.err = fmt.Errorf("transactional batch without a transactional id: %w", kerr.InvalidTxnState)
		} else if err := b.verifyTxnPartition(ctx, *req.TransactionID, n.pid, n.epoch, n.tp.Topic, n.tp.Partition); err != nil {
			c.err = verifyError(err)
		} else {
			c.v.OK = true
		}
		checks[n.tp] = c
	}
	return checks
}

// verifyError maps the coordinator's answer to what a producer understands.
func verifyError(err error) error {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return fmt.Errorf("%w: verifying the transaction: %v", kerr.NotEnoughReplicas, err)
	}
	switch ke {
	case kerr.NotCoordinator, kerr.CoordinatorNotAvailable, kerr.CoordinatorLoadInProgress, kerr.ConcurrentTransactions, kerr.RequestTimedOut:
		return fmt.Errorf("%w: transaction coordinator: %v", kerr.NotEnoughReplicas, err)
	case kerr.InvalidTxnState, kerr.ProducerFenced, kerr.InvalidProducerEpoch, kerr.InvalidProducerIDMapping:
		return fmt.Errorf("partition not in the producer's ongoing transaction: %w", ke)
	}
	return fmt.Errorf("%w: transaction coordinator: %v", kerr.InvalidTxnState, err)
}

// appendProduced appends a produce request's records, with the partition's
// transaction verification when one was needed.
func appendProduced(p *replica.Partition, records []byte, acks int16, checks map[replica.TP]txnCheck) (klog.AppendResult, error) {
	c, ok := checks[replica.TP{Topic: p.Topic, Partition: p.ID}]
	if !ok {
		// Not verified: the producer had an open transaction here (or the
		// batch is not transactional). If a marker closed it since, the batch
		// is refused rather than opening a transaction unverified.
		return p.AppendAsLeaderTxn(records, acks, &klog.TxnVerification{})
	}
	if c.err != nil {
		return klog.AppendResult{}, c.err
	}
	return p.AppendAsLeaderTxn(records, acks, &c.v)
}
