package log

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// record is one record of a magic-v2 batch, as far as the cleaner and the
// compacted-topic key check need it.
type record struct {
	raw      []byte // the whole record, length prefix included
	tsDelta  int64
	offDelta int64
	key      []byte
	value    []byte
	hasKey   bool // a null key (length -1) is no key; an empty key is one
	hasValue bool // a null value makes the record a tombstone
}

// nextRecord decodes the record at the start of b and returns it with the
// bytes after it.
func nextRecord(b []byte) (record, []byte, error) {
	length, n := binary.Varint(b)
	if n <= 0 || length < 1 || int64(len(b)-n) < length {
		return record{}, nil, fmt.Errorf("record length: %w", kerr.CorruptMessage)
	}
	r := record{raw: b[:n+int(length)]}
	body := b[n : n+int(length)]
	rest := b[n+int(length):]
	body = body[1:] // attributes, unused by magic 2
	var ok bool
	if r.tsDelta, body, ok = varint(body); !ok {
		return record{}, nil, fmt.Errorf("record timestamp delta: %w", kerr.CorruptMessage)
	}
	if r.offDelta, body, ok = varint(body); !ok {
		return record{}, nil, fmt.Errorf("record offset delta: %w", kerr.CorruptMessage)
	}
	if r.key, body, ok = varbytes(body); !ok {
		return record{}, nil, fmt.Errorf("record key: %w", kerr.CorruptMessage)
	}
	r.hasKey = r.key != nil
	if r.value, _, ok = varbytes(body); !ok {
		return record{}, nil, fmt.Errorf("record value: %w", kerr.CorruptMessage)
	}
	r.hasValue = r.value != nil
	return r, rest, nil
}

func varint(b []byte) (int64, []byte, bool) {
	v, n := binary.Varint(b)
	if n <= 0 {
		return 0, nil, false
	}
	return v, b[n:], true
}

// varbytes reads a varint length and that many bytes; length -1 is nil.
func varbytes(b []byte) ([]byte, []byte, bool) {
	length, b, ok := varint(b)
	if !ok || length < -1 || length > int64(len(b)) {
		return nil, nil, false
	}
	if length == -1 {
		return nil, b, true
	}
	return b[:length:length], b[length:], true
}

// batchRecords calls fn for each record of a whole batch, decompressing it
// first.
func batchRecords(h BatchHeader, batch []byte, fn func(record) error) error {
	recs, err := decompress(h.Compression(), batch[BatchHeaderSize:])
	if err != nil {
		return fmt.Errorf("batch %d: %w: %w", h.BaseOffset, kerr.CorruptMessage, err)
	}
	for n := int32(0); n < h.NumRecords; n++ {
		r, rest, err := nextRecord(recs)
		if err != nil {
			return fmt.Errorf("record %d of batch %d: %w", n, h.BaseOffset, err)
		}
		if err := fn(r); err != nil {
			return err
		}
		recs = rest
	}
	if len(recs) != 0 {
		return fmt.Errorf("batch %d: %d bytes after its %d records: %w", h.BaseOffset, len(recs), h.NumRecords, kerr.CorruptMessage)
	}
	return nil
}

// checkKeys refuses records without a key, which a compacted topic cannot
// keep: Kafka answers INVALID_RECORD. It is the one check of a produce that
// decodes records, and only compacted topics pay for it.
func checkKeys(records []byte, hdrs []BatchHeader) error {
	pos := int64(0)
	for _, h := range hdrs {
		err := batchRecords(h, records[pos:pos+h.Size()], func(r record) error {
			if !r.hasKey {
				return fmt.Errorf("compacted topic cannot accept a record without a key (batch %d, offset delta %d): %w", h.BaseOffset, r.offDelta, kerr.InvalidRecord)
			}
			return nil
		})
		if err != nil {
			return err
		}
		pos += h.Size()
	}
	return nil
}
