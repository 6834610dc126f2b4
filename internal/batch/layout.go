package batch

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Byte positions of the fields of a batch header.
const (
	OffBaseOffset      = 0
	OffLength          = 8
	OffLeaderEpoch     = 12
	OffMagic           = 16
	OffCRC             = 17
	OffAttributes      = 21
	OffLastOffsetDelta = 23
	OffFirstTimestamp  = 27
	OffMaxTimestamp    = 35
	OffProducerID      = 43
	OffProducerEpoch   = 51
	OffBaseSequence    = 53
	OffNumRecords      = 57

	// HeaderSize is the size of a batch header; the records section follows it.
	HeaderSize = 61
	// LogOverhead is what batchLength does not count: baseOffset and batchLength.
	LogOverhead = 12
	// MinLength is the batchLength of a batch with no record bytes.
	MinLength = HeaderSize - LogOverhead
	// Magic is the only batch format version this package reads.
	Magic = 2
)

// Attribute bits.
const (
	AttrCompressionMask = 0x07
	AttrLogAppendTime   = 0x08
	AttrTransactional   = 0x10
	AttrControl         = 0x20
	// AttrDeleteHorizon says that firstTimestamp holds the batch's delete
	// horizon (KIP-534): the log cleaner set it when the batch first held
	// a tombstone or a removable marker, and removes them once it passed.
	AttrDeleteHorizon = 0x40
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header is a decoded batch header.
type Header struct {
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
func (h Header) Size() int64 { return LogOverhead + int64(h.Length) }

// LastOffset is the offset of the batch's last record.
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// Compression is the codec id: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.
func (h Header) Compression() int8 { return int8(h.Attributes & AttrCompressionMask) }

// LogAppendTime reports whether the batch carries broker-assigned timestamps.
func (h Header) LogAppendTime() bool { return h.Attributes&AttrLogAppendTime != 0 }

// Transactional reports whether the batch belongs to a transaction.
func (h Header) Transactional() bool { return h.Attributes&AttrTransactional != 0 }

// Control reports whether the batch holds a control record (a transaction marker).
func (h Header) Control() bool { return h.Attributes&AttrControl != 0 }

// DeleteHorizon is the time from which the cleaner may remove the batch's
// tombstones, or the batch itself when it is a marker, if it has one.
func (h Header) DeleteHorizon() (int64, bool) {
	return h.FirstTimestamp, h.Attributes&AttrDeleteHorizon != 0
}

// LastSequence is the producer sequence of the batch's last record.
func (h Header) LastSequence() int32 { return AddSequence(h.BaseSequence, h.LastOffsetDelta) }

// AddSequence adds delta to a producer sequence, wrapping from MaxInt32 to 0 as Kafka's do.
func AddSequence(seq, delta int32) int32 {
	if seq > math.MaxInt32-delta {
		return delta - (math.MaxInt32 - seq) - 1
	}
	return seq + delta
}

// ParseHeader decodes the header at the start of b. It checks the magic and
// the length, neither the CRC nor the record count, and not that b holds the
// whole batch. Errors wrap kerr.CorruptMessage.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("batch header needs %d bytes, have %d: %w", HeaderSize, len(b), kerr.CorruptMessage)
	}
	h := Header{
		BaseOffset:           int64(binary.BigEndian.Uint64(b[OffBaseOffset:])),
		Length:               int32(binary.BigEndian.Uint32(b[OffLength:])),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(b[OffLeaderEpoch:])),
		Magic:                int8(b[OffMagic]),
		CRC:                  binary.BigEndian.Uint32(b[OffCRC:]),
		Attributes:           int16(binary.BigEndian.Uint16(b[OffAttributes:])),
		LastOffsetDelta:      int32(binary.BigEndian.Uint32(b[OffLastOffsetDelta:])),
		FirstTimestamp:       int64(binary.BigEndian.Uint64(b[OffFirstTimestamp:])),
		MaxTimestamp:         int64(binary.BigEndian.Uint64(b[OffMaxTimestamp:])),
		ProducerID:           int64(binary.BigEndian.Uint64(b[OffProducerID:])),
		ProducerEpoch:        int16(binary.BigEndian.Uint16(b[OffProducerEpoch:])),
		BaseSequence:         int32(binary.BigEndian.Uint32(b[OffBaseSequence:])),
		NumRecords:           int32(binary.BigEndian.Uint32(b[OffNumRecords:])),
	}
	if h.Magic != Magic {
		return h, fmt.Errorf("batch magic %d, only magic 2 is supported: %w", h.Magic, kerr.CorruptMessage)
	}
	if h.Length < MinLength {
		return h, fmt.Errorf("batch length %d below the minimum %d: %w", h.Length, MinLength, kerr.CorruptMessage)
	}
	return h, nil
}

// PeekBaseOffset reads baseOffset from the first 8 bytes of b, which must hold them.
func PeekBaseOffset(b []byte) int64 { return int64(binary.BigEndian.Uint64(b[OffBaseOffset:])) }

// PeekLength reads batchLength from the first LogOverhead bytes of b, which must hold them.
func PeekLength(b []byte) int32 { return int32(binary.BigEndian.Uint32(b[OffLength:])) }

// PeekMagic reads the magic byte from b, which must hold at least OffMagic+1 bytes.
func PeekMagic(b []byte) int8 { return int8(b[OffMagic]) }

// Checksum computes the CRC32C a whole batch must carry: attributes to the end.
func Checksum(batch []byte) uint32 { return crc32.Checksum(batch[OffAttributes:], castagnoli) }

// CRCValid reports whether a whole batch's stored CRC32C matches its contents.
func CRCValid(batch []byte) bool {
	return len(batch) >= HeaderSize && binary.BigEndian.Uint32(batch[OffCRC:]) == Checksum(batch)
}

// SetBaseOffset writes baseOffset, which lies outside the CRC.
func SetBaseOffset(batch []byte, off int64) {
	binary.BigEndian.PutUint64(batch[OffBaseOffset:], uint64(off))
}

// SetLeaderEpoch writes partitionLeaderEpoch, which lies outside the CRC.
func SetLeaderEpoch(batch []byte, epoch int32) {
	binary.BigEndian.PutUint32(batch[OffLeaderEpoch:], uint32(epoch))
}

// SetLogAppendTime stamps a batch with the broker's time, marks its timestamp
// type and recomputes the CRC, since both fields are covered by it.
func SetLogAppendTime(batch []byte, ts int64) {
	attrs := binary.BigEndian.Uint16(batch[OffAttributes:])
	binary.BigEndian.PutUint16(batch[OffAttributes:], attrs|AttrLogAppendTime)
	binary.BigEndian.PutUint64(batch[OffFirstTimestamp:], uint64(ts))
	binary.BigEndian.PutUint64(batch[OffMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint32(batch[OffCRC:], Checksum(batch))
}

// SetMaxTimestamp corrects maxTimestamp and recomputes the CRC, as Kafka's
// leader does when a producer's header disagrees with its records.
func SetMaxTimestamp(batch []byte, ts int64) {
	binary.BigEndian.PutUint64(batch[OffMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint32(batch[OffCRC:], Checksum(batch))
}

// Encode writes h followed by the records section, taking magic 2 and
// batchLength from the section and computing the CRC.
func Encode(h Header, section []byte) []byte {
	b := make([]byte, HeaderSize, HeaderSize+len(section))
	binary.BigEndian.PutUint64(b[OffBaseOffset:], uint64(h.BaseOffset))
	binary.BigEndian.PutUint32(b[OffLength:], uint32(MinLength+len(section)))
	binary.BigEndian.PutUint32(b[OffLeaderEpoch:], uint32(h.PartitionLeaderEpoch))
	b[OffMagic] = Magic
	binary.BigEndian.PutUint16(b[OffAttributes:], uint16(h.Attributes))
	binary.BigEndian.PutUint32(b[OffLastOffsetDelta:], uint32(h.LastOffsetDelta))
	binary.BigEndian.PutUint64(b[OffFirstTimestamp:], uint64(h.FirstTimestamp))
	binary.BigEndian.PutUint64(b[OffMaxTimestamp:], uint64(h.MaxTimestamp))
	binary.BigEndian.PutUint64(b[OffProducerID:], uint64(h.ProducerID))
	binary.BigEndian.PutUint16(b[OffProducerEpoch:], uint16(h.ProducerEpoch))
	binary.BigEndian.PutUint32(b[OffBaseSequence:], uint32(h.BaseSequence))
	binary.BigEndian.PutUint32(b[OffNumRecords:], uint32(h.NumRecords))
	b = append(b, section...)
	binary.BigEndian.PutUint32(b[OffCRC:], Checksum(b))
	return b
}
