package batch

import (
	"context"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Rules are the topic settings a leader validates a producer's batch
// against, as Kafka's LogValidator does.
type Rules struct {
	Codecs Codecs
	// MaxMessageBytes is max.message.bytes: the largest batch accepted. Its
	// records may decompress to DecompressLimit(MaxMessageBytes,
	// DecompressRatio) at most.
	MaxMessageBytes int
	// DecompressRatio is message.decompression.max.ratio (0: DecompressFactor).
	DecompressRatio int
	// CreateTime is message.timestamp.type=CreateTime: record timestamps
	// are the producer's, checked against TimestampDiffMaxMs.
	CreateTime bool
	// TimestampDiffMaxMs is message.timestamp.difference.max.ms; MaxInt64
	// means no check.
	TimestampDiffMaxMs int64
	// Now is the broker's clock in Unix milliseconds.
	Now int64
	// RequireKeys refuses records without a key (a compacted topic).
	RequireKeys bool
}

// CheckProduce validates the records field of one partition of a produce
// request as Kafka's LogValidator does, and returns its one batch's header:
//   - exactly one batch (Produce v3 and later), magic 2, whole, CRC32C right,
//     at most max.message.bytes (CORRUPT_MESSAGE, MESSAGE_TOO_LARGE);
//   - recordsCount = lastOffsetDelta+1 = the records present, offset deltas
//     0, 1, 2 ..., every varint length inside the section and nothing after
//     the last record (INVALID_RECORD);
//   - no control batch, a known codec, producer fields that belong together
//     (INVALID_RECORD, UNSUPPORTED_COMPRESSION_TYPE);
//   - with CreateTime, every record's timestamp within
//     message.timestamp.difference.max.ms of the broker's clock
//     (INVALID_TIMESTAMP), and a maxTimestamp that disagrees with the records
//     corrected in place, as Kafka does;
//   - with RequireKeys, a key on every record (INVALID_RECORD).
//
// A compressed section is streamed from the codec into a walk that stops at
// the first bad record and at DecompressLimit(MaxMessageBytes, DecompressRatio) bytes
// (MESSAGE_TOO_LARGE). An uncompressed one is read where it lies: no copy,
// no allocation. Besides maxTimestamp, records is not modified.
func CheckProduce(ctx context.Context, records []byte, r Rules) (Header, error) {
	var one [1]Header
	hdrs, err := validate(records, r.MaxMessageBytes, true, one[:0])
	if err != nil {
		return Header{}, err
	}
	if len(hdrs) != 1 {
		return Header{}, fmt.Errorf("%d record batches for one partition, Produce v3 and later carry one: %w", len(hdrs), kerr.InvalidRecord)
	}
	h := hdrs[0]
	if err := checkProducerFields(h); err != nil {
		return h, err
	}
	checkTs := r.CreateTime && r.TimestampDiffMaxMs != math.MaxInt64
	maxTs := int64(-1)
	var rec Record
	err = scan(ctx, r.Codecs, h, records, DecompressLimit(r.MaxMessageBytes, r.DecompressRatio), &rec, func() error {
		ts := h.FirstTimestamp + rec.TimestampDelta
		if checkTs {
			if d := ts - r.Now; d > r.TimestampDiffMaxMs || -d > r.TimestampDiffMaxMs {
				return fmt.Errorf("record %d of the batch has timestamp %d, more than %d ms from the broker's %d: %w",
					rec.OffsetDelta, ts, r.TimestampDiffMaxMs, r.Now, kerr.InvalidTimestamp)
			}
		}
		maxTs = max(maxTs, ts)
		if r.RequireKeys && !rec.HasKey() {
			return fmt.Errorf("compacted topic cannot accept a record without a key (offset delta %d): %w", rec.OffsetDelta, kerr.InvalidRecord)
		}
		return nil
	})
	if err != nil {
		return h, err
	}
	if r.CreateTime && maxTs != h.MaxTimestamp {
		SetMaxTimestamp(records[:h.Size()], maxTs)
		h.MaxTimestamp = maxTs
		h.CRC = Checksum(records[:h.Size()])
	}
	return h, nil
}

// checkProducerFields applies the header checks a leader makes beyond the format.
func checkProducerFields(h Header) error {
	switch {
	case h.Control():
		return fmt.Errorf("clients may not produce control batches: %w", kerr.InvalidRecord)
	case h.Compression() > 4:
		return fmt.Errorf("compression codec %d: %w", h.Compression(), kerr.UnsupportedCompressionType)
	case h.Transactional() && h.ProducerID < 0:
		return fmt.Errorf("transactional batch without a producer id: %w", kerr.InvalidRecord)
	case h.ProducerID >= 0 && (h.ProducerEpoch < 0 || h.BaseSequence < 0):
		return fmt.Errorf("producer %d batch with epoch %d and sequence %d: %w", h.ProducerID, h.ProducerEpoch, h.BaseSequence, kerr.InvalidRecord)
	}
	return nil
}
