package log

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Byte positions of the fields of a magic-v2 record batch header.
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

	// BatchHeaderSize is the size of a magic-v2 batch header up to the records.
	BatchHeaderSize = 61
	// logOverhead is baseOffset + length: the bytes not counted by Length.
	logOverhead = 12
	// minBatchLength is the smallest Length a batch with no record bytes has.
	minBatchLength = BatchHeaderSize - logOverhead
)

// Attribute bits of a record batch.
const (
	attrCompressionMask = 0x07
	attrLogAppendTime   = 0x08
	attrTransactional   = 0x10
	attrControl         = 0x20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BatchHeader is the decoded header of a magic-v2 record batch.
type BatchHeader struct {
	BaseOffset           int64
	Length               int32
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	FirstTimestamp       int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
}

// Size is the number of bytes the batch occupies in a log or a request.
func (h BatchHeader) Size() int64 { return logOverhead + int64(h.Length) }

// LastOffset is the offset of the batch's last record.
func (h BatchHeader) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// Compression is the codec id: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.
func (h BatchHeader) Compression() int8 { return int8(h.Attributes & attrCompressionMask) }

// LogAppendTime reports whether the batch carries broker-assigned timestamps.
func (h BatchHeader) LogAppendTime() bool { return h.Attributes&attrLogAppendTime != 0 }

// Transactional reports whether the batch belongs to a transaction.
func (h BatchHeader) Transactional() bool { return h.Attributes&attrTransactional != 0 }

// Control reports whether the batch holds control records (transaction markers).
func (h BatchHeader) Control() bool { return h.Attributes&attrControl != 0 }

// LastSequence is the producer sequence of the batch's last record; sequences
// wrap from MaxInt32 to 0 as Kafka's do.
func (h BatchHeader) LastSequence() int32 {
	return addSequence(h.BaseSequence, h.LastOffsetDelta)
}

func addSequence(seq, delta int32) int32 {
	if seq > math.MaxInt32-delta {
		return delta - (math.MaxInt32 - seq) - 1
	}
	return seq + delta
}

// ParseBatchHeader decodes the first BatchHeaderSize bytes of b. It checks the
// magic and the length but neither the CRC nor the record count, so it also
// reads batches that Kafka's compaction has thinned.
func ParseBatchHeader(b []byte) (BatchHeader, error) {
	if len(b) < BatchHeaderSize {
		return BatchHeader{}, fmt.Errorf("batch header needs %d bytes, have %d: %w", BatchHeaderSize, len(b), kerr.CorruptMessage)
	}
	h := BatchHeader{
		BaseOffset:           int64(binary.BigEndian.Uint64(b[offBaseOffset:])),
		Length:               int32(binary.BigEndian.Uint32(b[offLength:])),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(b[offLeaderEpoch:])),
		Magic:                int8(b[offMagic]),
		CRC:                  binary.BigEndian.Uint32(b[offCRC:]),
		Attributes:           int16(binary.BigEndian.Uint16(b[offAttributes:])),
		LastOffsetDelta:      int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])),
		FirstTimestamp:       int64(binary.BigEndian.Uint64(b[offFirstTimestamp:])),
		MaxTimestamp:         int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])),
		ProducerID:           int64(binary.BigEndian.Uint64(b[offProducerID:])),
		ProducerEpoch:        int16(binary.BigEndian.Uint16(b[offProducerEpoch:])),
		BaseSequence:         int32(binary.BigEndian.Uint32(b[offBaseSequence:])),
		NumRecords:           int32(binary.BigEndian.Uint32(b[offNumRecords:])),
	}
	if h.Magic != 2 {
		return h, fmt.Errorf("batch magic %d, only magic 2 is supported: %w", h.Magic, kerr.CorruptMessage)
	}
	if h.Length < minBatchLength {
		return h, fmt.Errorf("batch length %d below the minimum %d: %w", h.Length, minBatchLength, kerr.CorruptMessage)
	}
	return h, nil
}

// checkRecordCount rejects batches whose record count cannot be right. A
// client's batch holds exactly lastOffsetDelta+1 records (exact). One the
// cleaner rewrote keeps its offset span but may hold fewer records, or none
// when it is kept for the producer's sequence numbers, so batches read from a
// log or fetched from a leader only need a count within the span.
func checkRecordCount(h BatchHeader, exact bool) error {
	if h.LastOffsetDelta < 0 {
		return fmt.Errorf("batch has last offset delta %d: %w", h.LastOffsetDelta, kerr.CorruptMessage)
	}
	if exact && h.NumRecords <= 0 {
		return fmt.Errorf("batch has %d records: %w", h.NumRecords, kerr.CorruptMessage)
	}
	if exact && h.LastOffsetDelta != h.NumRecords-1 {
		return fmt.Errorf("batch has %d records but last offset delta %d: %w", h.NumRecords, h.LastOffsetDelta, kerr.CorruptMessage)
	}
	if h.NumRecords < 0 || h.NumRecords-1 > h.LastOffsetDelta {
		return fmt.Errorf("batch has %d records but last offset delta %d: %w", h.NumRecords, h.LastOffsetDelta, kerr.CorruptMessage)
	}
	return nil
}

// batchCRC computes the CRC32C a batch must carry: over attributes to the end.
func batchCRC(batch []byte) uint32 {
	return crc32.Checksum(batch[offAttributes:], castagnoli)
}

// ValidateBatches checks every batch in records: complete lengths, magic 2,
// CRC32C, a record count consistent with lastOffsetDelta, and a size of at
// most maxBatchBytes (0 means no limit). It returns the parsed headers in order.
func ValidateBatches(records []byte, maxBatchBytes int) ([]BatchHeader, error) {
	return validateBatches(records, maxBatchBytes, true)
}

// ValidateLogBatches checks batches that come from a log rather than a
// producer, such as a follower's fetch: as ValidateBatches, but a batch the
// cleaner thinned may hold fewer records than its offset span.
func ValidateLogBatches(records []byte) ([]BatchHeader, error) {
	return validateBatches(records, 0, false)
}

func validateBatches(records []byte, maxBatchBytes int, exactCount bool) ([]BatchHeader, error) {
	if len(records) == 0 {
		return nil, fmt.Errorf("no record batches: %w", kerr.InvalidRecord)
	}
	var hdrs []BatchHeader
	for pos := 0; pos < len(records); {
		rest := records[pos:]
		if len(rest) < logOverhead {
			return nil, fmt.Errorf("batch at byte %d: %d trailing bytes are not a batch: %w", pos, len(rest), kerr.CorruptMessage)
		}
		length := int32(binary.BigEndian.Uint32(rest[offLength:]))
		if length < minBatchLength {
			return nil, fmt.Errorf("batch at byte %d: length %d below the minimum %d: %w", pos, length, minBatchLength, kerr.CorruptMessage)
		}
		size := logOverhead + int64(length)
		if maxBatchBytes > 0 && size > int64(maxBatchBytes) {
			return nil, fmt.Errorf("batch at byte %d: %d bytes exceeds max.message.bytes %d: %w", pos, size, maxBatchBytes, kerr.MessageTooLarge)
		}
		if size > int64(len(rest)) {
			return nil, fmt.Errorf("batch at byte %d: length %d runs past the %d bytes given: %w", pos, length, len(rest), kerr.CorruptMessage)
		}
		batch := rest[:size]
		h, err := ParseBatchHeader(batch)
		if err == nil {
			err = checkRecordCount(h, exactCount)
		}
		if err != nil {
			return nil, fmt.Errorf("batch at byte %d: %w", pos, err)
		}
		if got := batchCRC(batch); got != h.CRC {
			return nil, fmt.Errorf("batch at byte %d: crc32c %08x, header says %08x: %w", pos, got, h.CRC, kerr.CorruptMessage)
		}
		hdrs = append(hdrs, h)
		pos += int(size)
	}
	return hdrs, nil
}

// setBaseOffset and setLeaderEpoch write fields that lie outside the CRC.
func setBaseOffset(batch []byte, off int64) {
	binary.BigEndian.PutUint64(batch[offBaseOffset:], uint64(off))
}

func setLeaderEpoch(batch []byte, epoch int32) {
	binary.BigEndian.PutUint32(batch[offLeaderEpoch:], uint32(epoch))
}

// setLogAppendTime stamps a batch with the broker's time, marks its timestamp
// type and recomputes the CRC, since both fields are covered by it.
func setLogAppendTime(batch []byte, ts int64) {
	attrs := binary.BigEndian.Uint16(batch[offAttributes:])
	binary.BigEndian.PutUint16(batch[offAttributes:], attrs|attrLogAppendTime)
	binary.BigEndian.PutUint64(batch[offFirstTimestamp:], uint64(ts))
	binary.BigEndian.PutUint64(batch[offMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint32(batch[offCRC:], batchCRC(batch))
}
