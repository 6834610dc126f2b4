package chaos

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ack is one acknowledged record: its sequence value and the offset the
// broker acknowledged it at.
type ack struct {
	seq    uint64
	offset int64
}

// producer writes 8-byte big-endian sequence numbers to every partition of
// a topic in turn and remembers, per partition and in acknowledgement order,
// each record acknowledged without error.
type producer struct {
	cl         *kgo.Client
	topic      string
	partitions int32

	mu       sync.Mutex
	acked    map[int32][]ack
	nacked   int
	failed   int
	errs     map[string]int
	unbuffed int
	lost     []string
	// onAck, when set, is told of each acknowledgement as it arrives.
	onAck func(partition int32, at time.Time)
}

// newProducer makes an idempotent acks=all producer on c whose records wait
// up to deliveryTimeout for a leader and a full enough ISR.
func newProducer(c *cluster, topic string, partitions int32, deliveryTimeout time.Duration) *producer {
	p := &producer{topic: topic, partitions: partitions, acked: map[int32][]ack{}, errs: map[string]int{}}
	p.cl = c.client(
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordDeliveryTimeout(deliveryTimeout),
		kgo.ProducerLinger(2*time.Millisecond),
		kgo.ProducerOnDataLossDetected(func(topic string, partition int32) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.lost = append(p.lost, fmt.Sprintf("%s-%d", topic, partition))
		}),
	)
	return p
}

// run produces one record per partition every interval until stop is
// closed. Records that do not fit the client's buffer are skipped, not
// waited for, so stopping never blocks; they count as never sent.
func (p *producer) run(stop <-chan struct{}, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var seq uint64
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		for part := int32(0); part < p.partitions; part++ {
			seq++
			r := &kgo.Record{Topic: p.topic, Partition: part, Value: binary.BigEndian.AppendUint64(nil, seq)}
			// The context outlives the loop: cancelling it would fail
			// buffered records.
			p.cl.TryProduce(context.Background(), r, p.promise)
		}
	}
}

func (p *producer) promise(r *kgo.Record, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case err == nil:
		p.acked[r.Partition] = append(p.acked[r.Partition], ack{seq: binary.BigEndian.Uint64(r.Value), offset: r.Offset})
		p.nacked++
		if p.onAck != nil {
			p.onAck(r.Partition, time.Now())
		}
	case err == kgo.ErrMaxBuffered:
		p.unbuffed++
	default:
		p.failed++
		p.errs[err.Error()]++
	}
}

// ackedCount is how many records were acknowledged so far.
func (p *producer) ackedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.nacked
}

// flush waits for every buffered record to be acknowledged or failed.
func (p *producer) flush(ctx context.Context) error { return p.cl.Flush(ctx) }

// summary says how many records were acknowledged, failed and skipped, and
// the distinct errors.
func (p *producer) summary() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := fmt.Sprintf("%d acknowledged, %d failed, %d not buffered", p.nacked, p.failed, p.unbuffed)
	keys := make([]string, 0, len(p.errs))
	for k := range p.errs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s += fmt.Sprintf("\n  %dx %s", p.errs[k], k)
	}
	return s
}

// stored is a record read back from a partition.
type stored struct {
	offset int64
	epoch  int32 // the leader epoch of its batch
	value  []byte
}

// readBack consumes every partition of topic from offset 0 up to ends (the
// high watermarks), from any replica the client picks.
func readBack(ctx context.Context, c *cluster, topic string, ends map[int32]int64) (map[int32][]stored, error) {
	offsets := map[int32]kgo.Offset{}
	for p := range ends {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	defer cl.Close()
	out := map[int32][]stored{}
	pending := func() int {
		n := 0
		for p, end := range ends {
			got := out[p]
			if end > 0 && (len(got) == 0 || got[len(got)-1].offset < end-1) {
				n++
			}
		}
		return n
	}
	for pending() > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("reading back: %d partitions not read to their end: %w", pending(), err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < ends[r.Partition] {
				out[r.Partition] = append(out[r.Partition], stored{offset: r.Offset, epoch: r.LeaderEpoch, value: r.Value})
			}
		})
	}
	return out, nil
}

// checkAcked compares the acknowledged records with what was read back and
// returns every violation found: an acknowledged record missing, at another
// offset or in another order than acknowledged; any value stored twice; any
// value that is not an 8-byte sequence number.
func checkAcked(acked map[int32][]ack, read map[int32][]stored) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	type place struct {
		partition int32
		offset    int64
	}
	where := map[uint64][]place{}
	byOffset := map[int32]map[int64]uint64{}
	for p, recs := range read {
		byOffset[p] = map[int64]uint64{}
		for _, r := range recs {
			if len(r.value) != 8 {
				add("partition %d offset %d: value of %d bytes, not a sequence number", p, r.offset, len(r.value))
				continue
			}
			seq := binary.BigEndian.Uint64(r.value)
			where[seq] = append(where[seq], place{p, r.offset})
			byOffset[p][r.offset] = seq
		}
	}
	for seq, ps := range where {
		if len(ps) > 1 {
			add("sequence %d stored %d times: %v", seq, len(ps), ps)
		}
	}
	for p, acks := range acked {
		prev := int64(-1)
		for _, a := range acks {
			got, ok := byOffset[p][a.offset]
			switch {
			case ok && got == a.seq:
			case len(where[a.seq]) == 0:
				add("partition %d: acknowledged sequence %d (offset %d) is missing", p, a.seq, a.offset)
			default:
				add("partition %d: acknowledged sequence %d at offset %d, found at %v", p, a.seq, a.offset, where[a.seq])
			}
			if a.offset <= prev {
				add("partition %d: sequence %d acknowledged at offset %d after offset %d", p, a.seq, a.offset, prev)
			}
			prev = a.offset
		}
	}
	sort.Strings(problems)
	return problems
}
