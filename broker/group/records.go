package group

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

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

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

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
		rec := kmsg.Record{OffsetDelta: int32(i), Key: r.key, Value: r.value}
		rec.Length = int32(len(rec.AppendTo(nil)) - 1) // a zero length is one varint byte
		body = rec.AppendTo(body)
	}
	ms := now.UnixMilli()
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       ms,
		MaxTimestamp:         ms,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(recs)),
		Records:              body,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], castagnoli))
	return out
}

var builtinCodecs = codec.Lookup(codec.Builtins())

// readBatch calls fn with the offset, key and value of every record in one
// magic v2 batch. Control batches (transaction markers) carry no group data.
func readBatch(ctx context.Context, batch []byte, fn func(offset int64, key, value []byte) error) error {
	h, err := codec.ParseBatchHeader(batch)
	if err != nil {
		return err
	}
	if h.Magic != 2 {
		return fmt.Errorf("record batch at offset %d: magic %d, want 2", h.BaseOffset, h.Magic)
	}
	if !codec.CRCValid(batch[:min(len(batch), h.Size())]) {
		return fmt.Errorf("record batch at offset %d: CRC mismatch", h.BaseOffset)
	}
	if h.Control() {
		return nil
	}
	_, section, err := codec.DecompressBatch(ctx, batch, builtinCodecs)
	if err != nil {
		return err
	}
	raw, err := codec.SplitRecords(section)
	if err != nil {
		return fmt.Errorf("record batch at offset %d: %w", h.BaseOffset, err)
	}
	for _, r := range raw {
		var rec kmsg.Record
		if err := rec.ReadFrom(r); err != nil {
			return fmt.Errorf("record batch at offset %d: %w", h.BaseOffset, err)
		}
		if err := fn(h.BaseOffset+int64(rec.OffsetDelta), rec.Key, rec.Value); err != nil {
			return err
		}
	}
	return nil
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
