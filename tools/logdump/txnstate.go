package logdump

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// decoder reads one record of an internal topic; it never fails: what it
// cannot read it says in the result's Error.
type decoder func(key, value []byte) *Decoded

// TxnKey is the key of a __transaction_state record (TransactionLogKey).
type TxnKey struct {
	Version         int16  `json:"version" yaml:"version"`
	TransactionalID string `json:"transactional_id" yaml:"transactional_id"`
}

// TxnValue is a transactional id's state (TransactionLogValue).
type TxnValue struct {
	Version       int16  `json:"version" yaml:"version"`
	ProducerID    int64  `json:"producer_id" yaml:"producer_id"`
	ProducerEpoch int16  `json:"producer_epoch" yaml:"producer_epoch"`
	TimeoutMs     int32  `json:"timeout_ms" yaml:"timeout_ms"`
	State         string `json:"state" yaml:"state"`
	// Partitions are topic-partition; empty when the state is Empty (Kafka writes null).
	Partitions          []string `json:"partitions" yaml:"partitions"`
	LastUpdateTimestamp int64    `json:"last_update_timestamp" yaml:"last_update_timestamp"`
	StartTimestamp      int64    `json:"start_timestamp" yaml:"start_timestamp"`
}

// decodeTxnRecord decodes one __transaction_state record (key version 0;
// value versions 0 and, read for the same fields, 1).
func decodeTxnRecord(key, value []byte) *Decoded {
	if len(key) < 2 {
		return &Decoded{Kind: "unknown", Error: "key shorter than its version"}
	}
	if v := int16(binary.BigEndian.Uint16(key)); v != 0 {
		return &Decoded{Kind: "unknown", Error: fmt.Sprintf("key version %d is not a transaction log key", v)}
	}
	d := &Decoded{Kind: "transaction_metadata"}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		d.Error = fmt.Sprintf("key: %v", err)
		return d
	}
	d.Key = TxnKey{Version: k.Version, TransactionalID: k.TransactionalID}
	if value == nil {
		return d
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		d.Error = fmt.Sprintf("value: %v", err)
		return d
	}
	tv := TxnValue{Version: v.Version, ProducerID: v.ProducerID, ProducerEpoch: v.ProducerEpoch, TimeoutMs: v.TimeoutMillis,
		State: v.State.String(), Partitions: []string{}, LastUpdateTimestamp: v.LastUpdateTimestamp, StartTimestamp: v.StartTimestamp}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			tv.Partitions = append(tv.Partitions, t.Topic+"-"+strconv.Itoa(int(p)))
		}
	}
	d.Value = tv
	return d
}
