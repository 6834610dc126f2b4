package batch

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// minRecordLength is the smallest record body: attributes, timestamp delta,
// offset delta, key length, value length and header count, one byte each.
const minRecordLength = 6

// Record is one record of a batch. Its slices point into the section it was
// parsed from.
type Record struct {
	Raw            []byte // the whole record, length prefix included
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Key            []byte // nil for a null key; an empty key is not nil
	Value          []byte // nil for a null value: a tombstone
	NumHeaders     int
	headers        []byte
}

// HasKey reports whether the record has a key (a null key is none, an empty one is).
func (r Record) HasKey() bool { return r.Key != nil }

// RecordHeader is one header of a record.
type RecordHeader struct {
	Key   string
	Value []byte // nil for a null value
}

// Headers decodes the record's headers; parsing already checked their structure.
func (r Record) Headers() []RecordHeader {
	out := make([]RecordHeader, 0, r.NumHeaders)
	b := r.headers
	for range r.NumHeaders {
		var k, v []byte
		k, b, _ = varbytes(b)
		v, b, _ = varbytes(b)
		out = append(out, RecordHeader{Key: string(k), Value: v})
	}
	return out
}

func recordError(what string) error {
	return fmt.Errorf("record %s: %w", what, kerr.InvalidRecord)
}

// ParseRecord decodes the record at the start of b (its varint length first)
// and returns it with the bytes after it. Every length must fit the record,
// and the record's fields must fill its length exactly.
func ParseRecord(b []byte) (Record, []byte, error) {
	length, n := binary.Varint(b)
	if n <= 0 {
		return Record{}, nil, recordError("length is not a varint")
	}
	if length < minRecordLength || length > int64(len(b)-n) {
		return Record{}, nil, fmt.Errorf("record length %d does not fit the %d bytes left: %w", length, len(b)-n, kerr.InvalidRecord)
	}
	end := n + int(length)
	r, err := parseBody(b[n:end])
	if err != nil {
		return Record{}, nil, err
	}
	r.Raw = b[:end:end]
	return r, b[end:], nil
}

// parseBody decodes a record without its length prefix.
func parseBody(body []byte) (Record, error) {
	var r Record
	r.Attributes = int8(body[0])
	b := body[1:]
	var ok bool
	if r.TimestampDelta, b, ok = varint(b); !ok {
		return r, recordError("timestamp delta is not a varint")
	}
	var off int64
	if off, b, ok = varint(b); !ok || off < 0 || off > math.MaxInt32 {
		return r, recordError("offset delta is not a varint in [0, 2^31)")
	}
	r.OffsetDelta = int32(off)
	if r.Key, b, ok = varbytes(b); !ok {
		return r, recordError("key length does not fit the record")
	}
	if r.Value, b, ok = varbytes(b); !ok {
		return r, recordError("value length does not fit the record")
	}
	count, b, ok := varint(b)
	// A header takes at least two bytes, which bounds the count before any loop.
	if !ok || count < 0 || count > int64(len(b)/2) {
		return r, recordError("header count does not fit the record")
	}
	r.NumHeaders = int(count)
	r.headers = b
	for range count {
		var k []byte
		if k, b, ok = varbytes(b); !ok || k == nil {
			return r, recordError("header key is null or does not fit the record")
		}
		if _, b, ok = varbytes(b); !ok {
			return r, recordError("header value does not fit the record")
		}
	}
	if len(b) != 0 {
		return r, fmt.Errorf("record has %d bytes after its headers: %w", len(b), kerr.InvalidRecord)
	}
	return r, nil
}

func varint(b []byte) (int64, []byte, bool) {
	// Most fields of a record (attributes aside) fit one byte: deltas of
	// small batches, short keys, header counts.
	if len(b) > 0 && b[0] < 0x80 {
		return int64(b[0]>>1) ^ -int64(b[0]&1), b[1:], true
	}
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

// recordWalk holds what a walk over a batch's records checks as it goes.
type recordWalk struct {
	h    Header
	n    int32
	last int32 // offset delta of the previous record, -1 before the first
}

// next checks record r, the n-th of the batch.
func (w *recordWalk) next(r Record) error {
	if w.n >= w.h.NumRecords {
		return fmt.Errorf("batch %d holds more than the %d records it declares: %w", w.h.BaseOffset, w.h.NumRecords, kerr.InvalidRecord)
	}
	if r.OffsetDelta <= w.last || r.OffsetDelta > w.h.LastOffsetDelta {
		return fmt.Errorf("record %d of batch %d has offset delta %d after %d, last offset delta %d: %w",
			w.n, w.h.BaseOffset, r.OffsetDelta, w.last, w.h.LastOffsetDelta, kerr.InvalidRecord)
	}
	w.last = r.OffsetDelta
	w.n++
	return nil
}

func (w *recordWalk) done(trailing int) error {
	if w.n != w.h.NumRecords {
		return fmt.Errorf("batch %d holds %d records, declares %d: %w", w.h.BaseOffset, w.n, w.h.NumRecords, kerr.InvalidRecord)
	}
	if trailing != 0 {
		return fmt.Errorf("batch %d has %d bytes after its %d records: %w", w.h.BaseOffset, trailing, w.n, kerr.InvalidRecord)
	}
	return nil
}

// EachRecord walks the uncompressed records section of the batch h: exactly
// h.NumRecords records, offset deltas rising within [0, lastOffsetDelta],
// every length fitting, nothing after the last record. It calls fn for each
// record and stops at the first bad one or the first error fn returns.
func EachRecord(h Header, section []byte, fn func(Record) error) error {
	w := recordWalk{h: h, last: -1}
	for len(section) > 0 {
		if w.n >= h.NumRecords {
			break
		}
		r, rest, err := ParseRecord(section)
		if err != nil {
			return fmt.Errorf("record %d of batch %d: %w", w.n, h.BaseOffset, err)
		}
		if err := w.next(r); err != nil {
			return err
		}
		if err := fn(r); err != nil {
			return err
		}
		section = rest
	}
	return w.done(len(section))
}
