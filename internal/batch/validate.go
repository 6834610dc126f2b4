package batch

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// CheckCount rejects batches whose record count cannot be right. A producer's
// batch holds exactly lastOffsetDelta+1 records (exact). One the cleaner
// rewrote keeps its offset span but may hold fewer records, or none, so
// batches read from a log or fetched from a leader only need a count within
// the span.
func CheckCount(h Header, exact bool) error {
	if h.LastOffsetDelta < 0 {
		return fmt.Errorf("batch has last offset delta %d: %w", h.LastOffsetDelta, kerr.CorruptMessage)
	}
	if exact && h.NumRecords <= 0 {
		return fmt.Errorf("batch has %d records: %w", h.NumRecords, kerr.InvalidRecord)
	}
	if exact && h.LastOffsetDelta != h.NumRecords-1 {
		return fmt.Errorf("batch has %d records but last offset delta %d: %w", h.NumRecords, h.LastOffsetDelta, kerr.InvalidRecord)
	}
	if h.NumRecords < 0 || h.NumRecords-1 > h.LastOffsetDelta {
		return fmt.Errorf("batch has %d records but last offset delta %d: %w", h.NumRecords, h.LastOffsetDelta, kerr.CorruptMessage)
	}
	return nil
}

// ValidateProduce checks the headers of the batches in a producer's records
// field: complete lengths, magic 2, CRC32C, recordsCount = lastOffsetDelta+1,
// and a size of at most maxBatchBytes (0 means no limit). It returns the
// headers in order. The records themselves are checked by CheckRecords.
func ValidateProduce(records []byte, maxBatchBytes int) ([]Header, error) {
	return validate(records, maxBatchBytes, true, nil)
}

// ValidateLog checks batches that come from a log rather than a producer,
// such as a follower's fetch: as ValidateProduce, but a batch the cleaner
// thinned may hold fewer records than its offset span.
func ValidateLog(records []byte) ([]Header, error) {
	return validate(records, 0, false, nil)
}

// validate appends the headers to hdrs (CheckProduce's is an array on its
// stack: one batch allocates nothing).
func validate(records []byte, maxBatchBytes int, exactCount bool, hdrs []Header) ([]Header, error) {
	if len(records) == 0 {
		return nil, fmt.Errorf("no record batches: %w", kerr.InvalidRecord)
	}
	for pos := 0; pos < len(records); {
		rest := records[pos:]
		if len(rest) < LogOverhead {
			return nil, fmt.Errorf("batch at byte %d: %d trailing bytes are not a batch: %w", pos, len(rest), kerr.CorruptMessage)
		}
		length := PeekLength(rest)
		if length < MinLength {
			return nil, fmt.Errorf("batch at byte %d: length %d below the minimum %d: %w", pos, length, MinLength, kerr.CorruptMessage)
		}
		size := LogOverhead + int64(length)
		if maxBatchBytes > 0 && size > int64(maxBatchBytes) {
			return nil, fmt.Errorf("batch at byte %d: %d bytes exceeds max.message.bytes %d: %w", pos, size, maxBatchBytes, kerr.MessageTooLarge)
		}
		if size > int64(len(rest)) {
			return nil, fmt.Errorf("batch at byte %d: length %d runs past the %d bytes given: %w", pos, length, len(rest), kerr.CorruptMessage)
		}
		batch := rest[:size]
		h, err := ParseHeader(batch)
		if err == nil {
			err = CheckCount(h, exactCount)
		}
		if err != nil {
			return nil, fmt.Errorf("batch at byte %d: %w", pos, err)
		}
		if got := Checksum(batch); got != h.CRC {
			return nil, fmt.Errorf("batch at byte %d: crc32c %08x, header says %08x: %w", pos, got, h.CRC, kerr.CorruptMessage)
		}
		hdrs = append(hdrs, h)
		pos += int(size)
	}
	return hdrs, nil
}

// Split cuts a records field into its batches (sub-slices of b), checking
// only that each header parses and each batch is whole.
func Split(b []byte) ([][]byte, error) {
	var out [][]byte
	for pos := 0; pos < len(b); {
		h, err := ParseHeader(b[pos:])
		if err != nil {
			return nil, fmt.Errorf("at byte %d: %w", pos, err)
		}
		end := int64(pos) + h.Size()
		if end > int64(len(b)) {
			return nil, fmt.Errorf("at byte %d: batch at offset %d is %d bytes, %d left: %w",
				pos, h.BaseOffset, h.Size(), len(b)-pos, kerr.CorruptMessage)
		}
		out = append(out, b[pos:end:end])
		pos = int(end)
	}
	return out, nil
}
