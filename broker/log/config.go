package log

import (
	"fmt"
	"math"
	"time"
)

// Timestamp types of message.timestamp.type.
const (
	CreateTime    = "CreateTime"
	LogAppendTime = "LogAppendTime"
)

// Config holds the topic settings a partition log obeys, under Kafka's names.
// Start from DefaultConfig: zero values are not defaults.
type Config struct {
	SegmentBytes          int64  // segment.bytes
	SegmentMs             int64  // segment.ms
	RetentionMs           int64  // retention.ms; -1 keeps data forever
	RetentionBytes        int64  // retention.bytes; -1 means no size limit
	IndexIntervalBytes    int    // index.interval.bytes
	FlushIntervalMessages int64  // flush.messages
	FlushIntervalMs       int64  // flush.ms
	MaxMessageBytes       int    // max.message.bytes: the largest batch accepted
	TimestampType         string // message.timestamp.type: CreateTime or LogAppendTime
	// MessageTimestampDifferenceMaxMs is message.timestamp.difference.max.ms:
	// with CreateTime, a batch whose timestamps lie further than this from the
	// broker's clock is rejected with INVALID_TIMESTAMP.
	MessageTimestampDifferenceMaxMs int64
	Now                             func() time.Time // nil means time.Now
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
		MaxMessageBytes:                 1048588,
		TimestampType:                   CreateTime,
		MessageTimestampDifferenceMaxMs: math.MaxInt64,
	}
}

// Validate reports the first setting that is out of range.
func (c Config) Validate() error {
	switch {
	case c.SegmentBytes < BatchHeaderSize || c.SegmentBytes > math.MaxInt32:
		return fmt.Errorf("segment.bytes %d outside [%d, %d]", c.SegmentBytes, BatchHeaderSize, math.MaxInt32)
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
	case c.MaxMessageBytes <= 0:
		return fmt.Errorf("max.message.bytes %d must be positive", c.MaxMessageBytes)
	case c.TimestampType != CreateTime && c.TimestampType != LogAppendTime:
		return fmt.Errorf("message.timestamp.type %q is neither %s nor %s", c.TimestampType, CreateTime, LogAppendTime)
	case c.MessageTimestampDifferenceMaxMs < 0:
		return fmt.Errorf("message.timestamp.difference.max.ms %d is negative", c.MessageTimestampDifferenceMaxMs)
	}
	return nil
}

func (c Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}
