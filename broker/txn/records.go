package txn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/batch"
	"github.com/ktoolhq/ktool/plugins/codec"
)

// The records of __transaction_state, as Kafka's TransactionLog: key
// TransactionLogKey v0 (int16 version 0, string transactional id); value
// TransactionLogValue v0 (int16 version 0, int64 producer id, int16 producer
// epoch, int32 timeout ms, int8 state, nullable [topic, [partition]], int64
// last update ms, int64 start ms); a null value is a tombstone (an expired
// transactional id).

// keyVersion and valueVersion are what this coordinator writes (Kafka 2.8's).
const (
	keyVersion   = 0
	valueVersion = 0
)

// EncodeKey is the record key of transactional id id.
func EncodeKey(id string) []byte {
	k := kmsg.NewTxnMetadataKey()
	k.Version, k.TransactionalID = keyVersion, id
	return k.AppendTo(nil)
}

// EncodeValue is the record value of m. Partitions are null when the state
// is Empty, as Kafka writes them.
func EncodeValue(m Metadata) []byte {
	v := kmsg.NewTxnMetadataValue()
	v.Version = valueVersion
	v.ProducerID, v.ProducerEpoch, v.TimeoutMillis = m.ProducerID, m.Epoch, m.TimeoutMs
	v.State = kmsg.TransactionState(m.State)
	v.LastUpdateTimestamp, v.StartTimestamp = m.UpdateMs, m.StartMs
	if m.State != Empty {
		v.Topics = []kmsg.TxnMetadataValueTopic{}
		for _, tp := range m.Partitions {
			if n := len(v.Topics); n > 0 && v.Topics[n-1].Topic == tp.Topic {
				v.Topics[n-1].Partitions = append(v.Topics[n-1].Partitions, tp.Partition)
				continue
			}
			t := kmsg.NewTxnMetadataValueTopic()
			t.Topic, t.Partitions = tp.Topic, []int32{tp.Partition}
			v.Topics = append(v.Topics, t)
		}
	}
	return v.AppendTo(nil)
}

// errUnknownVersion marks a record of a key version this coordinator does not
// know; it is skipped.
var errUnknownVersion = errors.New("unknown __transaction_state key version")

// DecodeKey reads a record key.
func DecodeKey(key []byte) (string, error) {
	var k kmsg.TxnMetadataKey
	if len(key) < 2 {
		return "", fmt.Errorf("__transaction_state key of %d bytes", len(key))
	}
	if err := k.ReadFrom(key); err != nil {
		return "", fmt.Errorf("__transaction_state key: %w", err)
	}
	if k.Version != keyVersion {
		return "", fmt.Errorf("%w %d", errUnknownVersion, k.Version)
	}
	return k.TransactionalID, nil
}

// DecodeValue reads a record value of transactional id id (not a tombstone).
// Values of a newer version are read for their v0 fields, as Kafka does with
// its flexible versions.
func DecodeValue(id string, value []byte) (Metadata, error) {
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return Metadata{}, fmt.Errorf("__transaction_state value of %q: %w", id, err)
	}
	if v.Version < 0 {
		return Metadata{}, fmt.Errorf("__transaction_state value of %q: version %d", id, v.Version)
	}
	st := State(v.State)
	if st < Empty || st > PrepareEpochFence {
		return Metadata{}, fmt.Errorf("__transaction_state value of %q: state %d", id, v.State)
	}
	m := Metadata{ID: id, ProducerID: v.ProducerID, LastProducerID: -1, Epoch: v.ProducerEpoch, LastEpoch: noEpoch,
		TimeoutMs: v.TimeoutMillis, State: st, StartMs: v.StartTimestamp, UpdateMs: v.LastUpdateTimestamp}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			m.Partitions = append(m.Partitions, TP{t.Topic, p})
		}
	}
	m.Partitions = sortedUnique(m.Partitions)
	return m, nil
}

func sortedUnique(tps []TP) []TP {
	if len(tps) == 0 {
		return nil
	}
	out := make([]TP, len(tps))
	copy(out, tps)
	sortTPs(out)
	w := 1
	for i := 1; i < len(out); i++ {
		if out[i] != out[w-1] {
			out[w] = out[i]
			w++
		}
	}
	return out[:w]
}

// record is one key and value; a nil value is a tombstone.
type record struct{ key, value []byte }

// buildBatch encodes records as one uncompressed v2 batch with no producer;
// the log sets the base offset and leader epoch.
func buildBatch(recs []record, now time.Time) []byte {
	var body []byte
	for i, r := range recs {
		body = batch.AppendRecord(body, 0, int32(i), r.key, r.value, nil)
	}
	ms := now.UnixMilli()
	return batch.Encode(batch.Header{
		PartitionLeaderEpoch: -1,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       ms,
		MaxTimestamp:         ms,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		BaseSequence:         -1,
		NumRecords:           int32(len(recs)),
	}, body)
}

// readBatch calls fn with the key and value of every record of one batch.
func readBatch(ctx context.Context, codecs batch.Codecs, b []byte, fn func(key, value []byte) error) error {
	h, err := batch.ParseHeader(b)
	if err != nil {
		return err
	}
	if h.Size() > int64(len(b)) {
		return fmt.Errorf("record batch at offset %d: %d bytes, have %d", h.BaseOffset, h.Size(), len(b))
	}
	b = b[:h.Size()]
	if !batch.CRCValid(b) {
		return fmt.Errorf("record batch at offset %d: CRC mismatch", h.BaseOffset)
	}
	if h.Control() {
		return nil
	}
	return batch.Records(ctx, codecs, h, b, codec.MaxDecompressed, func(r batch.Record) error {
		return fn(r.Key, r.Value)
	})
}
