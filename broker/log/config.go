package log

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/ktoolhq/ktool/internal/batch"
)

// Timestamp types of message.timestamp.type.
const (
	CreateTime    = "CreateTime"
	LogAppendTime = "LogAppendTime"
)

// Values of cleanup.policy; a policy may list both, comma-separated.
const (
	PolicyDelete  = "delete"
	PolicyCompact = "compact"
)

// Config holds the topic settings a partition log obeys, under Kafka's names.
// Start from DefaultConfig: zero values are not defaults.
type Config struct {
	SegmentBytes          int64 // segment.bytes
	SegmentMs             int64 // segment.ms
	RetentionMs           int64 // retention.ms; -1 keeps data forever
	RetentionBytes        int64 // retention.bytes; -1 means no size limit
	IndexIntervalBytes    int   // index.interval.bytes
	FlushIntervalMessages int64 // flush.messages
	FlushIntervalMs       int64 // flush.ms
	// CheckpointIntervalMs is replica.high.watermark.checkpoint.interval.ms:
	// between flushes, MaybeFlush rewrites changed checkpoint files (the
	// high watermark moves with every acknowledged produce) at most this
	// often. Each rewrite is a file written, synced and renamed and a
	// directory sync: once a second for each of many partitions, that was
	// half a busy broker's CPU.
	CheckpointIntervalMs int64
	MaxMessageBytes      int    // max.message.bytes: the largest batch accepted
	DecompressRatio      int    // message.decompression.max.ratio (0: batch.DecompressFactor)
	TimestampType        string // message.timestamp.type: CreateTime or LogAppendTime
	// MessageTimestampDifferenceMaxMs is message.timestamp.difference.max.ms:
	// with CreateTime, a batch whose timestamps lie further than this from the
	// broker's clock is rejected with INVALID_TIMESTAMP.
	MessageTimestampDifferenceMaxMs int64

	// CleanupPolicy is cleanup.policy: "delete", "compact" or both
	// ("compact,delete"). Time and size retention apply with delete, the
	// cleaner (Clean) with compact.
	CleanupPolicy          string
	DeleteRetentionMs      int64   // delete.retention.ms: from a tombstone's or marker's first cleaning to its removal (KIP-534)
	MinCleanableDirtyRatio float64 // min.cleanable.dirty.ratio
	MinCompactionLagMs     int64   // min.compaction.lag.ms
	MaxCompactionLagMs     int64   // max.compaction.lag.ms
	// CleanerDedupeBufferSize is log.cleaner.dedupe.buffer.size: the memory
	// one cleaning pass may use for its key map (cleanerBytesPerKey a key).
	CleanerDedupeBufferSize int64

	// Codecs decompresses and compresses the records of compressed batches
	// (produce validation, the cleaner, timestamp lookups): the plugin
	// catalog's resolution. Nil reads uncompressed batches only.
	Codecs batch.Codecs

	// FileCache holds the descriptors of inactive segments, shared by the
	// broker's logs; nil gives the log its own, of privateFileCacheSize.
	// Read by Open only.
	FileCache *FileCache

	Now func() time.Time // nil means time.Now
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:                    1 << 30,
		SegmentMs:                       7 * 24 * 60 * 60 * 1000,
		RetentionMs:                     7 * 24 * 60 * 60 * 1000,
		RetentionBytes:                  -1,
		IndexIntervalBytes:              4096,
		FlushIntervalMessages:           math.MaxInt64,
		FlushIntervalMs:                 math.MaxInt64,
		CheckpointIntervalMs:            5000,
		MaxMessageBytes:                 1048588,
		TimestampType:                   CreateTime,
		MessageTimestampDifferenceMaxMs: math.MaxInt64,
		CleanupPolicy:                   PolicyDelete,
		DeleteRetentionMs:               24 * 60 * 60 * 1000,
		MinCleanableDirtyRatio:          0.5,
		MinCompactionLagMs:              0,
		MaxCompactionLagMs:              math.MaxInt64,
		CleanerDedupeBufferSize:         128 << 20,
	}
}

// Validate reports the first setting that is out of range.
func (c Config) Validate() error {
	switch {
	case c.SegmentBytes < batch.HeaderSize || c.SegmentBytes > math.MaxInt32:
		return fmt.Errorf("segment.bytes %d outside [%d, %d]", c.SegmentBytes, batch.HeaderSize, math.MaxInt32)
	case c.SegmentMs <= 0:
		return fmt.Errorf("segment.ms %d must be positive", c.SegmentMs)
	case c.RetentionMs < -1:
		return fmt.Errorf("retention.ms %d below -1", c.RetentionMs)
	case c.RetentionBytes < -1:
		return fmt.Errorf("retention.bytes %d below -1", c.RetentionBytes)
	case c.IndexIntervalBytes < 0:
		return fmt.Errorf("index.interval.bytes %d is negative", c.IndexIntervalBytes)
	case c.FlushIntervalMessages <= 0:
		return fmt.Errorf("flush.messages %d must be positive", c.FlushIntervalMessages)
	case c.FlushIntervalMs < 0:
		return fmt.Errorf("flush.ms %d is negative", c.FlushIntervalMs)
	case c.CheckpointIntervalMs < 0:
		return fmt.Errorf("replica.high.watermark.checkpoint.interval.ms %d is negative", c.CheckpointIntervalMs)
	case c.MaxMessageBytes <= 0:
		return fmt.Errorf("max.message.bytes %d must be positive", c.MaxMessageBytes)
	case c.TimestampType != CreateTime && c.TimestampType != LogAppendTime:
		return fmt.Errorf("message.timestamp.type %q is neither %s nor %s", c.TimestampType, CreateTime, LogAppendTime)
	case c.MessageTimestampDifferenceMaxMs < 0:
		return fmt.Errorf("message.timestamp.difference.max.ms %d is negative", c.MessageTimestampDifferenceMaxMs)
	case c.DeleteRetentionMs < 0:
		return fmt.Errorf("delete.retention.ms %d is negative", c.DeleteRetentionMs)
	case !(c.MinCleanableDirtyRatio >= 0 && c.MinCleanableDirtyRatio <= 1):
		return fmt.Errorf("min.cleanable.dirty.ratio %v outside [0, 1]", c.MinCleanableDirtyRatio)
	case c.MinCompactionLagMs < 0:
		return fmt.Errorf("min.compaction.lag.ms %d is negative", c.MinCompactionLagMs)
	case c.MaxCompactionLagMs < 1:
		return fmt.Errorf("max.compaction.lag.ms %d must be positive", c.MaxCompactionLagMs)
	case c.MinCompactionLagMs > c.MaxCompactionLagMs:
		return fmt.Errorf("min.compaction.lag.ms %d is greater than max.compaction.lag.ms %d", c.MinCompactionLagMs, c.MaxCompactionLagMs)
	case c.CleanerDedupeBufferSize < cleanerBytesPerKey:
		return fmt.Errorf("log.cleaner.dedupe.buffer.size %d is below %d", c.CleanerDedupeBufferSize, cleanerBytesPerKey)
	}
	_, _, err := parseCleanupPolicy(c.CleanupPolicy)
	return err
}

// parseCleanupPolicy reads a cleanup.policy list as Kafka does: comma
// separated, spaces ignored, each item delete or compact.
// It does not allocate: appends ask it on every produce.
func parseCleanupPolicy(p string) (compact, del bool, err error) {
	for rest, more := p, true; more; {
		var item string
		item, rest, more = strings.Cut(rest, ",")
		switch strings.TrimSpace(item) {
		case PolicyCompact:
			compact = true
		case PolicyDelete:
			del = true
		default:
			return false, false, fmt.Errorf("cleanup.policy %q: each item must be %s or %s", p, PolicyDelete, PolicyCompact)
		}
	}
	return compact, del, nil
}

// Compact reports whether cleanup.policy includes compact.
func (c Config) Compact() bool {
	compact, _, _ := parseCleanupPolicy(c.CleanupPolicy)
	return compact
}

// Delete reports whether cleanup.policy includes delete.
func (c Config) Delete() bool {
	_, del, _ := parseCleanupPolicy(c.CleanupPolicy)
	return del
}

func (c Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}
