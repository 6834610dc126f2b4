package group

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/batch"
	"github.com/ktoolhq/ktool/plugins/codec"
)

// Record schema versions written to __consumer_offsets, as Kafka 2.8 writes them:
// offset commit key v1 with value v3 (v1 when the commit carries an explicit
// expiry), group metadata key v2 with value v3.
const (
	offsetKeyVersion      = 1
	groupKeyVersion       = 2
	offsetValueVersion    = 3
	offsetValueVersionExp = 1
	groupValueVersion     = 3
)

// topicPartition names a committed offset inside a group.
type topicPartition struct {
	topic     string
	partition int32
}

// offsetEntry is one committed offset. Times are Unix milliseconds; expireAt is
// -1 unless the commit asked for its own retention (OffsetCommit v2-v4).
type offsetEntry struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	commitAt    int64
	expireAt    int64
}

func offsetKey(group string, tp topicPartition) []byte {
	k := kmsg.NewOffsetCommitKey()
	k.Version = offsetKeyVersion
	k.Group, k.Topic, k.Partition = group, tp.topic, tp.partition
	return k.AppendTo(nil)
}

func offsetValue(e offsetEntry) []byte {
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetValueVersion
	if e.expireAt >= 0 {
		v.Version = offsetValueVersionExp
		v.ExpireTimestamp = e.expireAt
	}
	v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp = e.offset, e.leaderEpoch, e.metadata, e.commitAt
	return v.AppendTo(nil)
}

func groupKey(group string) []byte {
	k := kmsg.NewGroupMetadataKey()
	k.Version = groupKeyVersion
	k.Group = group
	return k.AppendTo(nil)
}

// record is one key and value for __consumer_offsets; a nil value is a tombstone.
type record struct {
	key, value []byte
}

// buildBatch encodes records as one uncompressed magic v2 batch with no producer.
// The log assigns the base offset and the partition leader epoch.
func buildBatch(recs []record, now time.Time) []byte {
	var body []byte
	for i, r := range recs {
		body = batch.AppendRecord(body, 0, int32(i), r.key, r.value, nil)
	}
	ms := now.UnixMilli()
	return batch.Encode(batch.Header{
		PartitionLeaderEpoch: -1,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       ms,
		MaxTimestamp:         ms,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		BaseSequence:         -1,
		NumRecords:           int32(len(recs)),
	}, body)
}

// readBatch calls fn with the offset, key and value of every record in one
// magic v2 batch, decompressing it through codecs. Control batches
// (transaction markers) carry no group data.
func readBatch(ctx context.Context, codecs batch.Codecs, b []byte, fn func(offset int64, key, value []byte) error) error {
	h, err := batch.ParseHeader(b)
	if err != nil {
		return err
	}
	if h.Size() > int64(len(b)) {
		return fmt.Errorf("record batch at offset %d: %d bytes, have %d", h.BaseOffset, h.Size(), len(b))
	}
	b = b[:h.Size()]
	if !batch.CRCValid(b) {
		return fmt.Errorf("record batch at offset %d: CRC mismatch", h.BaseOffset)
	}
	if h.Control() {
		return nil
	}
	return batch.Records(ctx, codecs, h, b, codec.MaxDecompressed, func(r batch.Record) error {
		return fn(h.BaseOffset+int64(r.OffsetDelta), r.Key, r.Value)
	})
}

// errUnknownKey marks a record whose key version this coordinator does not know
// (a newer Kafka's record types); such records are skipped.
var errUnknownKey = errors.New("unknown key version")

// parsedRecord is a decoded __consumer_offsets record.
type parsedRecord struct {
	group string
	// isOffset tells an offset commit (tp, offset) from group metadata (meta).
	isOffset bool
	tp       topicPartition
	offset   *offsetEntry             // nil: tombstone
	meta     *kmsg.GroupMetadataValue // nil: tombstone
}

func parseRecord(key, value []byte) (parsedRecord, error) {
	if len(key) < 2 {
		return parsedRecord{}, fmt.Errorf("record key of %d bytes", len(key))
	}
	switch version := int16(binary.BigEndian.Uint16(key)); version {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			return parsedRecord{}, fmt.Errorf("offset commit key: %w", err)
		}
		p := parsedRecord{group: k.Group, isOffset: true, tp: topicPartition{k.Topic, k.Partition}}
		if value == nil {
			return p, nil
		}
		var v kmsg.OffsetCommitValue
		if err := v.ReadFrom(value); err != nil {
			return parsedRecord{}, fmt.Errorf("offset commit value for group %q: %w", k.Group, err)
		}
		e := offsetEntry{offset: v.Offset, leaderEpoch: -1, metadata: v.Metadata, commitAt: v.CommitTimestamp, expireAt: -1}
		if v.Version >= 3 {
			e.leaderEpoch = v.LeaderEpoch
		}
		if v.Version == 1 {
			e.expireAt = v.ExpireTimestamp
		}
		p.offset = &e
		return p, nil
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			return parsedRecord{}, fmt.Errorf("group metadata key: %w", err)
		}
		p := parsedRecord{group: k.Group}
		if value == nil {
			return p, nil
		}
		var v kmsg.GroupMetadataValue
		if err := v.ReadFrom(value); err != nil {
			return parsedRecord{}, fmt.Errorf("group metadata value for group %q: %w", k.Group, err)
		}
		p.meta = &v
		return p, nil
	default:
		return parsedRecord{}, fmt.Errorf("%w %d", errUnknownKey, version)
	}
}
