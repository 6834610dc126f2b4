package chaos

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/batch"
	"github.com/ktoolhq/ktool/internal/chaoscheck"
)

// rawProducer is an idempotent acks=all producer that speaks Produce itself,
// one request in flight per partition, so that every error a broker
// answers with is seen (kgo retries them silently). A request that fails is
// retried with the same producer sequence, so the broker must deduplicate it.
type rawProducer struct {
	cl         *kgo.Client
	topic      string
	partitions int32
	id         int64
	epoch      int16

	mu        sync.Mutex
	leaders   map[int32]int32
	acked     map[int32][]chaoscheck.Ack
	nacked    int
	retriable map[string]int
	fatal     []string
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// newRawProducer takes a producer id from broker via InitProducerId.
func newRawProducer(ctx context.Context, c *cluster, broker int32, topic string, partitions int32) (*rawProducer, error) {
	cl := c.client()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionTimeoutMillis = -1
	resp, err := req.RequestWith(ctx, cl.Broker(int(broker)))
	if err != nil {
		return nil, fmt.Errorf("InitProducerId: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("InitProducerId: %w", err)
	}
	return &rawProducer{
		cl: cl, topic: topic, partitions: partitions, id: resp.ProducerID, epoch: resp.ProducerEpoch,
		leaders: map[int32]int32{}, acked: map[int32][]chaoscheck.Ack{}, retriable: map[string]int{},
	}, nil
}

// run produces to every partition until stop is closed; each partition
// sends one record every interval at most.
func (p *rawProducer) run(ctx context.Context, stop <-chan struct{}, interval time.Duration) {
	var wg sync.WaitGroup
	for part := int32(0); part < p.partitions; part++ {
		wg.Go(func() { p.runPartition(ctx, stop, part, interval) })
	}
	wg.Wait()
}

func (p *rawProducer) runPartition(ctx context.Context, stop <-chan struct{}, part int32, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var seq int32
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		value := uint64(part)<<32 | uint64(seq)
		offset, err := p.send(ctx, part, seq, value)
		switch {
		case err == nil:
			p.mu.Lock()
			p.acked[part] = append(p.acked[part], chaoscheck.Ack{Seq: value, Offset: offset})
			p.nacked++
			p.mu.Unlock()
			seq++
		case retriable(err):
			p.mu.Lock()
			p.retriable[errName(err)]++
			delete(p.leaders, part)
			p.mu.Unlock()
		default:
			p.mu.Lock()
			p.fatal = append(p.fatal, fmt.Sprintf("partition %d sequence %d: %v", part, seq, err))
			p.mu.Unlock()
			return
		}
	}
}

// retriable says whether a Kafka client retries err: retriable error codes,
// and connection failures of a broker going away.
func retriable(err error) bool {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Retriable
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

func errName(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return "connection: " + err.Error()
}

// leader is the partition's leader from the metadata, cached until an
// error.
func (p *rawProducer) leader(ctx context.Context, part int32) (int32, error) {
	p.mu.Lock()
	l, ok := p.leaders[part]
	p.mu.Unlock()
	if ok {
		return l, nil
	}
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(p.topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, p.cl)
	if err != nil {
		return -1, err
	}
	for _, t := range resp.Topics {
		for _, pt := range t.Partitions {
			if pt.Partition == part {
				if err := kerr.ErrorForCode(pt.ErrorCode); err != nil {
					return -1, err
				}
				if pt.Leader < 0 {
					return -1, kerr.LeaderNotAvailable
				}
				p.mu.Lock()
				p.leaders[part] = pt.Leader
				p.mu.Unlock()
				return pt.Leader, nil
			}
		}
	}
	return -1, kerr.UnknownTopicOrPartition
}

// send writes one record with producer sequence seq to the partition's
// leader and returns the offset it was acknowledged at.
func (p *rawProducer) send(ctx context.Context, part, seq int32, value uint64) (int64, error) {
	leader, err := p.leader(ctx, part)
	if err != nil {
		return -1, err
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = p.topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = part
	rp.Records = p.batch(seq, value)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	resp, err := req.RequestWith(rctx, p.cl.Broker(int(leader)))
	if err != nil {
		return -1, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, fmt.Errorf("produce response for %d topics, want 1 topic and partition", len(resp.Topics))
	}
	rp2 := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(rp2.ErrorCode); err != nil {
		return -1, err
	}
	return rp2.BaseOffset, nil
}

// batch is a magic-v2 record batch of one record whose value is the 8-byte
// big-endian value.
func (p *rawProducer) batch(seq int32, value uint64) []byte {
	now := time.Now().UnixMilli()
	rec := kmsg.Record{Value: binary.BigEndian.AppendUint64(nil, value)}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	b := kmsg.RecordBatch{
		Magic:          2,
		FirstTimestamp: now,
		MaxTimestamp:   now,
		ProducerID:     p.id,
		ProducerEpoch:  p.epoch,
		FirstSequence:  seq,
		NumRecords:     1,
		Records:        rec.AppendTo(nil),
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[batch.OffLength:], uint32(len(raw)-batch.LogOverhead))
	binary.BigEndian.PutUint32(raw[batch.OffCRC:], crc32.Checksum(raw[batch.OffAttributes:], castagnoli))
	return raw
}

func (p *rawProducer) ackedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.nacked
}

// errorSummary lists the retriable errors seen, with counts.
func (p *rawProducer) errorSummary() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	keys := make([]string, 0, len(p.retriable))
	for k := range p.retriable {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := ""
	for _, k := range keys {
		s += fmt.Sprintf("\n  %dx %s", p.retriable[k], k)
	}
	if s == "" {
		return " none"
	}
	return s
}
