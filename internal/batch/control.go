package batch

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ControlType is the type in a control record's key.
type ControlType int16

// Control record types Kafka defines.
const (
	ControlAbort  ControlType = 0
	ControlCommit ControlType = 1
)

func (t ControlType) String() string {
	switch t {
	case ControlAbort:
		return "ABORT"
	case ControlCommit:
		return "COMMIT"
	}
	return fmt.Sprintf("type %d", int16(t))
}

// Marker is an end-transaction marker: the one record of a control batch.
type Marker struct {
	Type             ControlType
	CoordinatorEpoch int32
}

// ControlKey decodes a control record's key: int16 version, int16 type.
func ControlKey(key []byte) (ControlType, error) {
	if len(key) < 4 {
		return 0, fmt.Errorf("control record key of %d bytes, want 4: %w", len(key), kerr.CorruptMessage)
	}
	if v := int16(binary.BigEndian.Uint16(key)); v != 0 {
		return 0, fmt.Errorf("control record key version %d, want 0: %w", v, kerr.CorruptMessage)
	}
	return ControlType(binary.BigEndian.Uint16(key[2:])), nil
}

// ParseMarker decodes the control record of a control batch.
func ParseMarker(r Record) (Marker, error) {
	t, err := ControlKey(r.Key)
	if err != nil {
		return Marker{}, err
	}
	if t != ControlAbort && t != ControlCommit {
		return Marker{}, fmt.Errorf("control record %s is not a transaction marker: %w", t, kerr.CorruptMessage)
	}
	if len(r.Value) < 6 {
		return Marker{}, fmt.Errorf("transaction marker value of %d bytes, want 6: %w", len(r.Value), kerr.CorruptMessage)
	}
	if v := int16(binary.BigEndian.Uint16(r.Value)); v != 0 {
		return Marker{}, fmt.Errorf("transaction marker value version %d, want 0: %w", v, kerr.CorruptMessage)
	}
	return Marker{Type: t, CoordinatorEpoch: int32(binary.BigEndian.Uint32(r.Value[2:]))}, nil
}

// EncodeMarker builds the control batch a transaction coordinator has a
// partition leader append: transactional, control, uncompressed, one record
// at offset delta 0 stamped ts. The log sets base offset and leader epoch.
func EncodeMarker(producerID int64, producerEpoch int16, m Marker, ts int64) []byte {
	key := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, 0), uint16(m.Type))
	value := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint16(nil, 0), uint32(m.CoordinatorEpoch))
	return Encode(Header{
		PartitionLeaderEpoch: -1,
		Attributes:           AttrTransactional | AttrControl,
		FirstTimestamp:       ts,
		MaxTimestamp:         ts,
		ProducerID:           producerID,
		ProducerEpoch:        producerEpoch,
		BaseSequence:         -1,
		NumRecords:           1,
	}, AppendRecord(nil, 0, 0, key, value, nil))
}

// AppendRecord appends one record (length prefix first) to dst; a nil key
// or value is null.
func AppendRecord(dst []byte, tsDelta int64, offDelta int32, key, value []byte, headers []RecordHeader) []byte {
	var body []byte
	body = append(body, 0)
	body = binary.AppendVarint(body, tsDelta)
	body = binary.AppendVarint(body, int64(offDelta))
	body = appendVarbytes(body, key)
	body = appendVarbytes(body, value)
	body = binary.AppendVarint(body, int64(len(headers)))
	for _, h := range headers {
		body = appendVarbytes(body, []byte(h.Key))
		body = appendVarbytes(body, h.Value)
	}
	dst = binary.AppendVarint(dst, int64(len(body)))
	return append(dst, body...)
}

func appendVarbytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	return append(binary.AppendVarint(dst, int64(len(b))), b...)
}

// MarkerOf decodes the marker of a whole control batch b (header included).
func MarkerOf(b []byte) (Marker, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return Marker{}, err
	}
	if !h.Control() {
		return Marker{}, fmt.Errorf("batch %d is not a control batch: %w", h.BaseOffset, kerr.CorruptMessage)
	}
	if h.Compression() != 0 || int64(len(b)) < h.Size() {
		return Marker{}, fmt.Errorf("control batch %d is compressed or truncated: %w", h.BaseOffset, kerr.CorruptMessage)
	}
	var m Marker
	found := false
	err = EachRecord(h, b[HeaderSize:h.Size()], func(r Record) error {
		if found {
			return nil
		}
		found = true
		mk, perr := ParseMarker(r)
		m = mk
		return perr
	})
	if err == nil && !found {
		err = fmt.Errorf("control batch %d holds no record: %w", h.BaseOffset, kerr.CorruptMessage)
	}
	return m, err
}
