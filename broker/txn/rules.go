package txn

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// State is a transaction's state, with Kafka's numbering (the
// transaction_status of TransactionLogValue).
type State int8

const (
	Empty State = iota
	Ongoing
	PrepareCommit
	PrepareAbort
	CompleteCommit
	CompleteAbort
	Dead
	PrepareEpochFence
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// String is Kafka's name of the state (what DescribeTransactions and
// ListTransactions carry).
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// ParseState is the state named s (Kafka's names).
func ParseState(s string) (State, bool) {
	for i, n := range stateNames {
		if n == s {
			return State(i), true
		}
	}
	return 0, false
}

// TP is a topic partition.
type TP struct {
	Topic     string
	Partition int32
}

func compareTP(a, b TP) int {
	if a.Topic != b.Topic {
		if a.Topic < b.Topic {
			return -1
		}
		return 1
	}
	return int(a.Partition) - int(b.Partition)
}

// noEpoch is Kafka's RecordBatch.NO_PRODUCER_EPOCH.
const noEpoch = -1

// maxEpoch is the largest producer epoch (Short.MaxValue).
const maxEpoch = 32767

// epochExhausted reports whether an epoch can no longer be bumped twice (a
// fence plus the InitProducerId that follows it), so the next InitProducerId
// takes a new producer id, as Kafka does.
func epochExhausted(e int16) bool { return e >= maxEpoch-1 }

// Metadata is one transactional id's state. LastProducerID and LastEpoch
// live in memory only (TransactionLogValue v0 has no field for them, as in
// Kafka 2.8): they let a producer retry an InitProducerId whose answer it
// lost (KIP-360).
type Metadata struct {
	ID             string
	ProducerID     int64
	LastProducerID int64
	Epoch          int16
	LastEpoch      int16
	TimeoutMs      int32
	State          State
	Partitions     []TP // sorted, unique; nil when Empty or Complete*
	StartMs        int64
	UpdateMs       int64
}

func (m Metadata) has(tp TP) bool {
	_, ok := slices.BinarySearchFunc(m.Partitions, tp, compareTP)
	return ok
}

// newMetadata is a transactional id seen for the first time, with producer id pid.
func newMetadata(id string, pid int64, timeoutMs int32, nowMs int64) Metadata {
	return Metadata{ID: id, ProducerID: pid, LastProducerID: -1, Epoch: noEpoch, LastEpoch: noEpoch,
		TimeoutMs: timeoutMs, State: Empty, StartMs: -1, UpdateMs: nowMs}
}

// InitRequest is an InitProducerId with a transactional id. ProducerID and
// ProducerEpoch are -1 unless the producer asks to bump its own epoch
// (v3+, KIP-360).
type InitRequest struct {
	TimeoutMs     int32
	ProducerID    int64
	ProducerEpoch int16
}

// initPlan is what an InitProducerId does.
type initPlan struct {
	next Metadata
	// abort: next is the PrepareAbort of the ongoing transaction with a bumped
	// epoch (fencing its producer); the client is told CONCURRENT_TRANSACTIONS
	// and retries once the abort completes.
	abort bool
	// rotate: next needs a new producer id (the epoch is exhausted); the
	// caller sets next.ProducerID.
	rotate bool
}

// planInit decides an InitProducerId against m, as Kafka 2.8's coordinator.
func planInit(m Metadata, r InitRequest, nowMs int64) (initPlan, *kerr.Error) {
	expected := r.ProducerID >= 0
	if expected {
		valid := m.Epoch == noEpoch || r.ProducerID == m.ProducerID ||
			(r.ProducerID == m.LastProducerID && epochExhausted(r.ProducerEpoch))
		if !valid {
			return initPlan{}, kerr.ProducerFenced
		}
	}
	switch m.State {
	case PrepareCommit, PrepareAbort:
		return initPlan{}, kerr.ConcurrentTransactions
	case Ongoing:
		n := m
		n.State, n.LastEpoch, n.UpdateMs = PrepareAbort, noEpoch, nowMs
		if n.Epoch < maxEpoch {
			n.Epoch++
		}
		return initPlan{next: n, abort: true}, nil
	case Empty, CompleteCommit, CompleteAbort:
	default:
		return initPlan{}, kerr.ConcurrentTransactions
	}
	n := m
	n.State, n.TimeoutMs, n.Partitions, n.StartMs, n.UpdateMs = Empty, r.TimeoutMs, nil, -1, nowMs
	if epochExhausted(m.Epoch) && (!expected || r.ProducerEpoch == m.Epoch) {
		n.LastProducerID, n.Epoch, n.LastEpoch = m.ProducerID, 0, noEpoch
		if expected {
			n.LastEpoch = m.Epoch
		}
		return initPlan{next: n, rotate: true}, nil
	}
	switch {
	case !expected:
		n.Epoch, n.LastEpoch = m.Epoch+1, noEpoch
	case m.Epoch == noEpoch || r.ProducerEpoch == m.Epoch:
		n.Epoch, n.LastEpoch = m.Epoch+1, m.Epoch
	case r.ProducerEpoch == m.LastEpoch:
		// A retry of a bump whose answer was lost: the same answer again.
	default:
		return initPlan{}, kerr.ProducerFenced
	}
	return initPlan{next: n}, nil
}

// checkProducer is the producer id and epoch check of AddPartitionsToTxn,
// AddOffsetsToTxn and the verification of KIP-890.
func checkProducer(m Metadata, pid int64, epoch int16) *kerr.Error {
	switch {
	case pid != m.ProducerID:
		return kerr.InvalidProducerIDMapping
	case epoch != m.Epoch:
		return kerr.ProducerFenced
	case m.State == PrepareCommit || m.State == PrepareAbort:
		return kerr.ConcurrentTransactions
	}
	return nil
}

// planAdd adds tps to m's transaction; ok=false with no error means they
// are all in it already and nothing is written.
func planAdd(m Metadata, pid int64, epoch int16, tps []TP, nowMs int64) (Metadata, bool, *kerr.Error) {
	if err := checkProducer(m, pid, epoch); err != nil {
		return Metadata{}, false, err
	}
	if m.State != Ongoing && m.State != Empty && m.State != CompleteCommit && m.State != CompleteAbort {
		return Metadata{}, false, kerr.ConcurrentTransactions
	}
	if m.State == Ongoing && !slices.ContainsFunc(tps, func(tp TP) bool { return !m.has(tp) }) {
		return Metadata{}, false, nil
	}
	n := m
	if m.State != Ongoing {
		n.Partitions, n.StartMs = nil, nowMs
	}
	n.Partitions = slices.Clone(n.Partitions)
	for _, tp := range tps {
		if !n.has(tp) {
			i, _ := slices.BinarySearchFunc(n.Partitions, tp, compareTP)
			n.Partitions = slices.Insert(n.Partitions, i, tp)
		}
	}
	n.State, n.UpdateMs = Ongoing, nowMs
	return n, true, nil
}

// verify reports which of tps are not in m's ongoing transaction (KIP-890
// part 1: a partition leader asks before it appends a transactional batch).
func verify(m Metadata, pid int64, epoch int16, tps []TP) ([]TP, *kerr.Error) {
	if err := checkProducer(m, pid, epoch); err != nil {
		return nil, err
	}
	var missing []TP
	for _, tp := range tps {
		if m.State != Ongoing || !m.has(tp) {
			missing = append(missing, tp)
		}
	}
	return missing, nil
}

// planEnd decides an EndTxn (fromClient) or a coordinator-made abort; done
// with no error means the transaction already ended that way (a retry).
func planEnd(m Metadata, pid int64, epoch int16, commit, fromClient bool, nowMs int64) (Metadata, bool, *kerr.Error) {
	if pid != m.ProducerID {
		return Metadata{}, false, kerr.InvalidProducerIDMapping
	}
	if (fromClient && epoch != m.Epoch) || epoch < m.Epoch {
		return Metadata{}, false, kerr.ProducerFenced
	}
	switch m.State {
	case Ongoing:
		n := m
		n.State, n.UpdateMs = PrepareAbort, nowMs
		if commit {
			n.State = PrepareCommit
		}
		return n, false, nil
	case CompleteCommit:
		if commit {
			return Metadata{}, true, nil
		}
	case CompleteAbort:
		if !commit {
			return Metadata{}, true, nil
		}
	case PrepareCommit:
		if commit {
			return Metadata{}, false, kerr.ConcurrentTransactions
		}
	case PrepareAbort:
		if !commit {
			return Metadata{}, false, kerr.ConcurrentTransactions
		}
	}
	return Metadata{}, false, kerr.InvalidTxnState
}

// complete is the Complete state that follows m's Prepare state once every
// marker is written.
func complete(m Metadata, nowMs int64) Metadata {
	n := m
	n.State = CompleteAbort
	if m.State == PrepareCommit {
		n.State = CompleteCommit
	}
	n.Partitions, n.UpdateMs = nil, nowMs
	return n
}

// timedOut reports whether m's transaction ran past its timeout; the abort
// that follows bumps the epoch, fencing the producer, as Kafka does.
func timedOut(m Metadata, nowMs int64) bool {
	return m.State == Ongoing && m.StartMs+int64(m.TimeoutMs) < nowMs
}

// planTimeoutAbort is the abort of a timed-out transaction. An exhausted
// epoch is not bumped (Kafka gives up on such a transaction; aborting it
// without a bump is better than leaving it hanging).
func planTimeoutAbort(m Metadata, nowMs int64) Metadata {
	n := m
	n.State, n.LastEpoch, n.UpdateMs = PrepareAbort, noEpoch, nowMs
	if n.Epoch < maxEpoch {
		n.Epoch++
	}
	return n
}

// expired reports whether an idle transactional id has outlived
// transactional.id.expiration.ms and is removed (a tombstone).
func expired(m Metadata, nowMs, expirationMs int64) bool {
	switch m.State {
	case Empty, CompleteCommit, CompleteAbort:
		return m.UpdateMs+expirationMs <= nowMs
	}
	return false
}

func sortTPs(tps []TP) { slices.SortFunc(tps, compareTP) }
