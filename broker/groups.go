package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/broker/group"
	klog "github.com/ktoolhq/ktool/broker/log"
	"github.com/ktoolhq/ktool/broker/replica"
	"github.com/ktoolhq/ktool/internal/batch"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// newGroupCoordinator builds the group coordinator over __consumer_offsets. A
// group's partition is hash(group) mod the topic's real partition count once the
// topic exists, as Kafka does, so changing offsets.topic.num.partitions later
// does not move every group away from its committed offsets.
func newGroupCoordinator(ctx context.Context, b *Broker) *group.Coordinator {
	s := b.cfg.Settings()
	n := s.OffsetsTopicPartitions
	if data, _, err := b.Store().Get(ctx, zkdata.TopicPath(offsetsTopic)); err == nil {
		if a, err := zkdata.DecodeTopicAssignment(data); err == nil && len(a.Partitions) > 0 {
			if int32(len(a.Partitions)) != n {
				b.logger.Warn("offsets.topic.num.partitions differs from the existing __consumer_offsets; using the topic's count",
					"configured", n, "partitions", len(a.Partitions))
			}
			n = int32(len(a.Partitions))
		}
	}
	return group.New(group.Config{
		BrokerID:              b.id,
		NumPartitions:         n,
		Log:                   offsetsLog{b},
		Codecs:                b.codecs,
		InitialRebalanceDelay: s.GroupInitialRebalanceDelay,
		MinSessionTimeout:     s.GroupMinSessionTimeout,
		MaxSessionTimeout:     s.GroupMaxSessionTimeout,
		MaxGroupSize:          s.GroupMaxSize,
		OffsetsRetention:      s.OffsetsRetention,
		OffsetsRetentionCheck: s.OffsetsRetentionCheckInterval,
		Logger:                b.logger.With("component", "group-coordinator"),
	})
}

// onLeadershipChange tells the group coordinator which __consumer_offsets
// partitions this broker now leads (load their groups) or no longer leads.
func (b *Broker) onLeadershipChange(updates []replica.LeaderUpdate, errs map[replica.TP]error) {
	for _, u := range updates {
		if u.TP.Topic != offsetsTopic || errs[u.TP] != nil {
			continue
		}
		if u.State.Leader == b.id {
			b.groups.BecomeLeader(u.TP.Partition, u.State.LeaderEpoch)
		} else {
			b.groups.Resign(u.TP.Partition)
		}
	}
	b.onTxnLeadershipChange(updates, errs)
}

func (b *Broker) onStopReplica(tp replica.TP) {
	if tp.Topic == offsetsTopic {
		b.groups.Resign(tp.Partition)
	}
	if tp.Topic == txnTopic {
		b.txns.Resign(tp.Partition)
	}
}

// offsetsLog gives the group coordinator the __consumer_offsets partitions.
type offsetsLog struct{ b *Broker }

func (o offsetsLog) Append(ctx context.Context, partition int32, records []byte) (int64, error) {
	p, err := o.b.leaderPartition(offsetsTopic, partition)
	if err != nil {
		return -1, err
	}
	var res klog.AppendResult
	if h, herr := batch.ParseHeader(records); herr == nil && h.ProducerID >= 0 {
		res, err = p.AppendAsCoordinator(records)
	} else {
		res, err = p.AppendAsLeader(records, -1)
	}
	if err != nil {
		return -1, err
	}
	if res.Sync {
		if err := p.Sync(res.LastOffset + 1); err != nil {
			return -1, err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, o.b.cfg.Settings().OffsetsCommitTimeout)
	defer cancel()
	if err := p.WaitReplicated(wctx, res.LastOffset); err != nil {
		return -1, err
	}
	return res.BaseOffset, nil
}

// Scan reads the partition's batches from the log start to the log end.
func (o offsetsLog) Scan(ctx context.Context, partition int32, fn func([]byte) error) error {
	return o.b.scanPartition(ctx, offsetsTopic, partition, fn)
}

// scanPartition reads an internal topic partition's batches from the log
// start to the log end, for a coordinator's load. Loading is not a hot path,
// so batches are read into memory.
func (b *Broker) scanPartition(ctx context.Context, topic string, partition int32, fn func([]byte) error) error {
	p := b.replicas.Get(replica.TP{Topic: topic, Partition: partition})
	if p == nil {
		return kerr.NotLeaderForPartition
	}
	// Up to the log end, not the high watermark: right after a leader change the
	// new leader's high watermark lags until its followers fetch again, and
	// commits acknowledged by the previous leader sit above it. (Kafka loads to
	// the log end for the same reason.)
	l := p.Log()
	end := l.LogEndOffset()
	off := l.LogStartOffset()
	for off < end {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := l.Read(off, 1<<20, end, true)
		if err != nil {
			return err
		}
		if r.Len == 0 {
			r.Release()
			return nil
		}
		buf := make([]byte, r.Len)
		_, err = r.File.ReadAt(buf, r.Pos)
		r.Release()
		if err != nil {
			return fmt.Errorf("reading %s-%d: %w", topic, partition, err)
		}
		next, err := eachBatch(buf, fn)
		if err != nil {
			return err
		}
		if next <= off {
			return fmt.Errorf("reading %s-%d: no progress at offset %d", topic, partition, off)
		}
		off = next
	}
	return nil
}

// eachBatch calls fn for each whole batch in buf and returns the offset after the last one.
func eachBatch(buf []byte, fn func([]byte) error) (int64, error) {
	next := int64(-1)
	for len(buf) >= batch.HeaderSize {
		h, err := batch.ParseHeader(buf)
		if err != nil || h.Size() > int64(len(buf)) {
			break
		}
		if err := fn(buf[:h.Size()]); err != nil {
			return next, err
		}
		next = h.LastOffset() + 1
		buf = buf[h.Size():]
	}
	return next, nil
}
