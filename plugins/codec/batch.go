package codec

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Offsets of the fields of a magic v2 record batch header.
const (
	offBaseOffset      = 0
	offLength          = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offFirstTimestamp  = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offNumRecords      = 57

	// BatchHeaderSize is the size of a magic v2 batch header; the records section follows it.
	BatchHeaderSize = 61
	// batchOverhead is what batchLength does not count: baseOffset and batchLength itself.
	batchOverhead = 12

	codecMask        = 0x07
	controlAttribute = 0x20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BatchHeader is a decoded magic v2 record batch header.
type BatchHeader struct {
	BaseOffset           int64  `json:"base_offset" yaml:"base_offset"`
	Length               int32  `json:"length" yaml:"length"`
	PartitionLeaderEpoch int32  `json:"partition_leader_epoch" yaml:"partition_leader_epoch"`
	Magic                int8   `json:"magic" yaml:"magic"`
	CRC                  uint32 `json:"crc" yaml:"crc"`
	Attributes           int16  `json:"attributes" yaml:"attributes"`
	LastOffsetDelta      int32  `json:"last_offset_delta" yaml:"last_offset_delta"`
	FirstTimestamp       int64  `json:"first_timestamp" yaml:"first_timestamp"`
	MaxTimestamp         int64  `json:"max_timestamp" yaml:"max_timestamp"`
	ProducerID           int64  `json:"producer_id" yaml:"producer_id"`
	ProducerEpoch        int16  `json:"producer_epoch" yaml:"producer_epoch"`
	BaseSequence         int32  `json:"base_sequence" yaml:"base_sequence"`
	NumRecords           int32  `json:"num_records" yaml:"num_records"`
}

// CodecID is the compression codec id in the attributes.
func (h BatchHeader) CodecID() int8 { return int8(h.Attributes & codecMask) }

// LogAppendTime reports whether timestamps are broker-assigned (attribute bit 3).
func (h BatchHeader) LogAppendTime() bool { return h.Attributes&0x08 != 0 }

// Transactional reports attribute bit 4.
func (h BatchHeader) Transactional() bool { return h.Attributes&0x10 != 0 }

// Control reports attribute bit 5: a transaction marker batch.
func (h BatchHeader) Control() bool { return h.Attributes&controlAttribute != 0 }

// Size is the batch's total size on the wire.
func (h BatchHeader) Size() int { return int(h.Length) + batchOverhead }

// LastOffset is the offset of the batch's last record.
func (h BatchHeader) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// ParseBatchHeader decodes the header at the start of b, which must hold at
// least the header. It checks the magic byte and that the length is sane,
// not that b holds the whole batch.
func ParseBatchHeader(b []byte) (BatchHeader, error) {
	if len(b) < offMagic+1 {
		return BatchHeader{}, fmt.Errorf("record batch truncated: %d bytes, need at least %d", len(b), offMagic+1)
	}
	h := BatchHeader{
		BaseOffset:           int64(binary.BigEndian.Uint64(b[offBaseOffset:])),
		Length:               int32(binary.BigEndian.Uint32(b[offLength:])),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(b[offLeaderEpoch:])),
		Magic:                int8(b[offMagic]),
	}
	if h.Magic != 2 {
		return h, fmt.Errorf("record batch at offset %d has magic %d; only magic 2 is supported", h.BaseOffset, h.Magic)
	}
	if len(b) < BatchHeaderSize {
		return h, fmt.Errorf("record batch at offset %d truncated: %d bytes, header needs %d", h.BaseOffset, len(b), BatchHeaderSize)
	}
	if int(h.Length) < BatchHeaderSize-batchOverhead {
		return h, fmt.Errorf("record batch at offset %d has length %d, less than a header", h.BaseOffset, h.Length)
	}
	h.CRC = binary.BigEndian.Uint32(b[offCRC:])
	h.Attributes = int16(binary.BigEndian.Uint16(b[offAttributes:]))
	h.LastOffsetDelta = int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:]))
	h.FirstTimestamp = int64(binary.BigEndian.Uint64(b[offFirstTimestamp:]))
	h.MaxTimestamp = int64(binary.BigEndian.Uint64(b[offMaxTimestamp:]))
	h.ProducerID = int64(binary.BigEndian.Uint64(b[offProducerID:]))
	h.ProducerEpoch = int16(binary.BigEndian.Uint16(b[offProducerEpoch:]))
	h.BaseSequence = int32(binary.BigEndian.Uint32(b[offBaseSequence:]))
	h.NumRecords = int32(binary.BigEndian.Uint32(b[offNumRecords:]))
	return h, nil
}

// CRCValid reports whether a whole batch's stored CRC32C matches its contents.
func CRCValid(batch []byte) bool {
	if len(batch) < BatchHeaderSize {
		return false
	}
	return binary.BigEndian.Uint32(batch[offCRC:]) == crc32.Checksum(batch[offAttributes:], castagnoli)
}

// SplitBatches cuts a records field into its batches (sub-slices of b).
func SplitBatches(b []byte) ([][]byte, error) {
	var out [][]byte
	for pos := 0; pos < len(b); {
		h, err := ParseBatchHeader(b[pos:])
		if err != nil {
			return nil, fmt.Errorf("at byte %d: %w", pos, err)
		}
		end := pos + h.Size()
		if end > len(b) {
			return nil, fmt.Errorf("at byte %d: record batch at offset %d truncated: size %d, %d bytes left",
				pos, h.BaseOffset, h.Size(), len(b)-pos)
		}
		out = append(out, b[pos:end:end])
		pos = end
	}
	return out, nil
}

// DecompressBatch returns the batch's header (a sub-slice of batch) and its
// records section, decompressed through the codec lookup gives for the
// batch's codec id (the section itself, not a copy, when uncompressed).
func DecompressBatch(ctx context.Context, batch []byte, lookup func(id int8) (Codec, error)) (header []byte, records []byte, err error) {
	h, err := ParseBatchHeader(batch)
	if err != nil {
		return nil, nil, err
	}
	if h.Size() > len(batch) {
		return nil, nil, fmt.Errorf("record batch at offset %d truncated: size %d, have %d bytes", h.BaseOffset, h.Size(), len(batch))
	}
	header, section := batch[:BatchHeaderSize], batch[BatchHeaderSize:h.Size()]
	id := h.CodecID()
	if id == IDNone {
		return header, section, nil
	}
	c, err := lookup(id)
	if err != nil {
		return nil, nil, fmt.Errorf("record batch at offset %d: %w", h.BaseOffset, err)
	}
	out, err := c.Decompress(ctx, [][]byte{section})
	if err != nil {
		return nil, nil, fmt.Errorf("record batch at offset %d: decompressing %s: %w", h.BaseOffset, c.Name(), err)
	}
	if len(out) != 1 {
		return nil, nil, fmt.Errorf("record batch at offset %d: codec %s returned %d sections for 1", h.BaseOffset, c.Name(), len(out))
	}
	return header, out[0], nil
}

// RecompressBatches rewrites each batch in batches (a records field: one or
// more magic v2 batches) to codec to (nil means uncompressed), keeping base
// offset, last offset delta, timestamps, producer id, epoch and sequence,
// leader epoch, the other attribute bits and the records themselves; it
// recomputes length and CRC32C. Batches already in to, and control batches
// (which Kafka never compresses), keep their bytes. Each codec is called once
// for all the batches it handles. The input is not modified.
func RecompressBatches(ctx context.Context, batches []byte, to Codec, lookup func(id int8) (Codec, error)) ([]byte, error) {
	parts, err := SplitBatches(batches)
	if err != nil {
		return nil, err
	}
	target := IDNone
	if to != nil {
		target = to.ID()
	}

	// Sections to rewrite, grouped by the codec that must decompress them.
	type pending struct {
		index   int
		section []byte
	}
	bySource := map[int8][]pending{}
	var order []int8
	rewrite := make([]bool, len(parts))
	for i, b := range parts {
		h, _ := ParseBatchHeader(b) // SplitBatches parsed it already
		if h.Control() || h.CodecID() == target {
			continue
		}
		if !CRCValid(b) {
			return nil, fmt.Errorf("record batch at offset %d: CRC mismatch, refusing to rewrite a corrupt batch", h.BaseOffset)
		}
		id := h.CodecID()
		if _, ok := bySource[id]; !ok {
			order = append(order, id)
		}
		bySource[id] = append(bySource[id], pending{i, b[BatchHeaderSize:]})
		rewrite[i] = true
	}
	if len(order) == 0 {
		return append([]byte(nil), batches...), nil
	}

	plain := make([][]byte, len(parts))
	for _, id := range order {
		ps := bySource[id]
		sections := make([][]byte, len(ps))
		for j, p := range ps {
			sections[j] = p.section
		}
		if id != IDNone {
			c, err := lookup(id)
			if err != nil {
				return nil, fmt.Errorf("record batch at offset %d: %w", int64(binary.BigEndian.Uint64(parts[ps[0].index])), err)
			}
			if sections, err = c.Decompress(ctx, sections); err != nil {
				return nil, fmt.Errorf("decompressing %s: %w", c.Name(), err)
			}
			if len(sections) != len(ps) {
				return nil, fmt.Errorf("codec %s returned %d sections for %d", c.Name(), len(sections), len(ps))
			}
		}
		for j, p := range ps {
			plain[p.index] = sections[j]
		}
	}

	if to != nil {
		var idx []int
		var in [][]byte
		for i := range parts {
			if rewrite[i] {
				idx = append(idx, i)
				in = append(in, plain[i])
			}
		}
		out, err := to.Compress(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("compressing %s: %w", to.Name(), err)
		}
		if len(out) != len(in) {
			return nil, fmt.Errorf("codec %s returned %d sections for %d", to.Name(), len(out), len(in))
		}
		for j, i := range idx {
			plain[i] = out[j]
		}
	}

	size := 0
	for i, b := range parts {
		if rewrite[i] {
			size += BatchHeaderSize + len(plain[i])
		} else {
			size += len(b)
		}
	}
	dst := make([]byte, 0, size)
	for i, b := range parts {
		if !rewrite[i] {
			dst = append(dst, b...)
			continue
		}
		section := plain[i]
		if BatchHeaderSize-batchOverhead+len(section) > 1<<31-1 {
			return nil, fmt.Errorf("record batch at offset %d would be larger than 2 GiB", int64(binary.BigEndian.Uint64(b)))
		}
		start := len(dst)
		dst = append(dst, b[:BatchHeaderSize]...)
		dst = append(dst, section...)
		out := dst[start:]
		binary.BigEndian.PutUint32(out[offLength:], uint32(len(out)-batchOverhead))
		attrs := binary.BigEndian.Uint16(out[offAttributes:])&^codecMask | uint16(target)
		binary.BigEndian.PutUint16(out[offAttributes:], attrs)
		binary.BigEndian.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], castagnoli))
	}
	return dst, nil
}

// SplitRecords cuts an uncompressed records section into its records, each
// with its varint length prefix, ready for kmsg.Record.ReadFrom.
func SplitRecords(section []byte) ([][]byte, error) {
	var out [][]byte
	for pos := 0; pos < len(section); {
		l, n := binary.Varint(section[pos:])
		if n <= 0 || l < 0 || l > int64(len(section)-pos-n) {
			return nil, fmt.Errorf("record %d at byte %d: bad or truncated length", len(out), pos)
		}
		end := pos + n + int(l)
		out = append(out, section[pos:end:end])
		pos = end
	}
	return out, nil
}
