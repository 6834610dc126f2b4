package batch

import (
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
	i := 0
	for range r.NumHeaders {
		var k, v []byte
		k, i = bytesAt(r.headers, i)
		v, i = bytesAt(r.headers, i)
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
	length, n := varintAt(b, 0)
	if n < 0 {
		return Record{}, nil, recordError("length is not a varint")
	}
	if length < minRecordLength || length > int64(len(b)-n) {
		return Record{}, nil, fmt.Errorf("record length %d does not fit the %d bytes left: %w", length, len(b)-n, kerr.InvalidRecord)
	}
	end := n + int(length)
	var r Record
	if err := parseBody(&r, b[n:end]); err != nil {
		return Record{}, nil, err
	}
	r.Raw = b[:end:end]
	return r, b[end:], nil
}

// parseBody decodes a record without its length prefix into r (every field
// but Raw). It walks body by index, the hot loop of every produce, and fills
// the caller's Record: a Record is 15 words, and copying it in and out of
// each call was a quarter of the walk (perf annotate, README "Where a
// produce request's time goes").
func parseBody(r *Record, body []byte) error {
	r.Attributes = int8(body[0])
	// Each varint is read by varintShort, inlined, when it takes one or two
	// bytes (every field of a record of up to 8 KiB but a timestamp delta
	// past 8 s), else by varintAt.
	var n int64
	i := 1
	if n, i = varintShort(body, 1); i < 0 {
		n, i = varintAt(body, 1)
	}
	if i < 0 {
		return recordError("timestamp delta is not a varint")
	}
	r.TimestampDelta = n
	j := i
	if n, i = varintShort(body, j); i < 0 {
		n, i = varintAt(body, j)
	}
	if i < 0 || n < 0 || n > math.MaxInt32 {
		return recordError("offset delta is not a varint in [0, 2^31)")
	}
	r.OffsetDelta = int32(n)
	// Key and value are read inline (bytesAt is too big to inline): they
	// are in every record.
	j = i
	if n, i = varintShort(body, j); i < 0 {
		n, i = varintAt(body, j)
	}
	if i < 0 || n < -1 || n > int64(len(body)-i) {
		return recordError("key length does not fit the record")
	}
	r.Key = nil
	if n >= 0 {
		r.Key = body[i : i+int(n) : i+int(n)]
		i += int(n)
	}
	j = i
	if n, i = varintShort(body, j); i < 0 {
		n, i = varintAt(body, j)
	}
	if i < 0 || n < -1 || n > int64(len(body)-i) {
		return recordError("value length does not fit the record")
	}
	r.Value = nil
	if n >= 0 {
		r.Value = body[i : i+int(n) : i+int(n)]
		i += int(n)
	}
	j = i
	var count int64
	if count, i = varintShort(body, j); i < 0 {
		count, i = varintAt(body, j)
	}
	// A header takes at least two bytes, which bounds the count before any loop.
	if i < 0 || count < 0 || count > int64(len(body)-i)/2 {
		return recordError("header count does not fit the record")
	}
	r.NumHeaders = int(count)
	r.headers = body[i:]
	for range count {
		var k []byte
		if k, i = bytesAt(body, i); i < 0 || k == nil {
			return recordError("header key is null or does not fit the record")
		}
		if _, i = bytesAt(body, i); i < 0 {
			return recordError("header value does not fit the record")
		}
	}
	if i != len(body) {
		return fmt.Errorf("record has %d bytes after its headers: %w", len(body)-i, kerr.InvalidRecord)
	}
	return nil
}

// varintShort reads the zigzag varint at b[i:] when it takes one or two
// bytes, as varintAt would; the index after it is -1 when it is longer or
// cut short (then varintAt says which). Small enough to inline, which
// varintAt with this fast path in front of its loop is not.
func varintShort(b []byte, i int) (int64, int) {
	if uint(i) >= uint(len(b)) {
		return 0, -1
	}
	ux, j := uint64(b[i]), i+1
	if ux >= 0x80 {
		if uint(j) >= uint(len(b)) || b[j] >= 0x80 {
			return 0, -1
		}
		ux, j = ux&0x7f|uint64(b[j])<<7, j+1
	}
	return int64(ux>>1) ^ -int64(ux&1), j
}

// varintAt reads the zigzag varint at b[i:] and returns it with the index
// after it, or -1 when there is none (cut short, or longer than 64 bits).
// It is small enough to inline into the record walk.
func varintAt(b []byte, i int) (int64, int) {
	var ux uint64
	for s := uint(0); i >= 0 && i < len(b) && s < 64; s += 7 {
		c := b[i]
		i++
		ux |= uint64(c&0x7f) << s
		if c < 0x80 {
			if s == 63 && c > 1 {
				break
			}
			return int64(ux>>1) ^ -int64(ux&1), i
		}
	}
	return 0, -1
}

// bytesAt reads a varint length and that many bytes at b[i:]; length -1 is
// nil. The index after them is -1 when they do not fit.
func bytesAt(b []byte, i int) ([]byte, int) {
	length, i := varintAt(b, i)
	switch {
	case i < 0 || length < -1 || length > int64(len(b)-i):
		return nil, -1
	case length == -1:
		return nil, i
	}
	end := i + int(length)
	return b[i:end:end], end
}

// recordWalk holds what a walk over a batch's records checks as it goes.
type recordWalk struct {
	h    Header
	n    int32
	last int32 // offset delta of the previous record, -1 before the first
}

// next checks record r, the n-th of the batch.
func (w *recordWalk) next(r *Record) error {
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
	var r Record
	return eachRecord(h, section, &r, func() error { return fn(r) })
}

// eachRecord is EachRecord parsing every record into *r, then calling fn,
// which reads it there: the produce path's walk. Nothing is copied per
// record, and r stays on its owner's stack (a Record handed to fn would
// escape to the heap).
func eachRecord(h Header, section []byte, r *Record, fn func() error) error {
	w := recordWalk{h: h, last: -1}
	i := 0
	for i < len(section) && w.n < h.NumRecords {
		length, j := varintShort(section, i)
		if j < 0 {
			length, j = varintAt(section, i)
		}
		if j < 0 || length < minRecordLength || length > int64(len(section)-j) {
			_, _, err := ParseRecord(section[i:]) // says which
			return fmt.Errorf("record %d of batch %d: %w", w.n, h.BaseOffset, err)
		}
		end := j + int(length)
		if err := parseBody(r, section[j:end]); err != nil {
			return fmt.Errorf("record %d of batch %d: %w", w.n, h.BaseOffset, err)
		}
		r.Raw = section[i:end:end]
		if err := w.next(r); err != nil {
			return err
		}
		if err := fn(); err != nil {
			return err
		}
		i = end
	}
	return w.done(len(section) - i)
}
