package chaoscheck

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Ack is one acknowledged record: its sequence value and the offset the
// broker acknowledged it at.
type Ack struct {
	Seq    uint64
	Offset int64
}

// Producer writes 8-byte big-endian sequence numbers to every partition of
// a topic in turn and remembers, per partition and in acknowledgement order,
// each record acknowledged without error.
type Producer struct {
	cl         *kgo.Client
	topic      string
	partitions int32

	mu       sync.Mutex
	acked    map[int32][]Ack
	nacked   int
	failed   int
	errs     map[string]int
	unbuffed int
	lost     []string
	// OnAck, when set, is told of each acknowledgement as it arrives.
	OnAck func(partition int32, at time.Time)
}

// NewProducer makes an idempotent acks=all producer, with a client from
// newClient, whose records wait
// up to deliveryTimeout for a leader and a full enough ISR.
func NewProducer(newClient func(...kgo.Opt) *kgo.Client, topic string, partitions int32, deliveryTimeout time.Duration) *Producer {
	p := &Producer{topic: topic, partitions: partitions, acked: map[int32][]Ack{}, errs: map[string]int{}}
	p.cl = newClient(
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

// Run produces one record per partition every interval until stop is
// closed. Records that do not fit the client's buffer are skipped, not
// waited for, so stopping never blocks; they count as never sent.
func (p *Producer) Run(stop <-chan struct{}, interval time.Duration) {
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

func (p *Producer) promise(r *kgo.Record, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case err == nil:
		p.acked[r.Partition] = append(p.acked[r.Partition], Ack{Seq: binary.BigEndian.Uint64(r.Value), Offset: r.Offset})
		p.nacked++
		if p.OnAck != nil {
			p.OnAck(r.Partition, time.Now())
		}
	case err == kgo.ErrMaxBuffered:
		p.unbuffed++
	default:
		p.failed++
		p.errs[err.Error()]++
	}
}

// AckedCount is how many records were acknowledged so far.
func (p *Producer) AckedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.nacked
}

// Flush waits for every buffered record to be acknowledged or failed.
func (p *Producer) Flush(ctx context.Context) error { return p.cl.Flush(ctx) }

// Summary says how many records were acknowledged, failed and skipped, and
// the distinct errors.
func (p *Producer) Summary() string {
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

// Stored is a record read back from a partition.
type Stored struct {
	Offset int64
	Epoch  int32 // the leader epoch of its batch
	Value  []byte
}

// ReadBack consumes every partition of topic from offset 0 up to ends (the
// high watermarks), from any replica the client (from newClient) picks.
func ReadBack(ctx context.Context, newClient func(...kgo.Opt) *kgo.Client, topic string, ends map[int32]int64) (map[int32][]Stored, error) {
	offsets := map[int32]kgo.Offset{}
	for p := range ends {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl := newClient(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	defer cl.Close()
	out := map[int32][]Stored{}
	pending := func() int {
		n := 0
		for p, end := range ends {
			got := out[p]
			if end > 0 && (len(got) == 0 || got[len(got)-1].Offset < end-1) {
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
				out[r.Partition] = append(out[r.Partition], Stored{Offset: r.Offset, Epoch: r.LeaderEpoch, Value: r.Value})
			}
		})
	}
	return out, nil
}

// CheckAcked compares the acknowledged records with what was read back and
// returns every violation found: an acknowledged record missing, at another
// offset or in another order than acknowledged; any value stored twice; any
// value that is not an 8-byte sequence number.
func CheckAcked(acked map[int32][]Ack, read map[int32][]Stored) []string {
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
			if len(r.Value) != 8 {
				add("partition %d offset %d: value of %d bytes, not a sequence number", p, r.Offset, len(r.Value))
				continue
			}
			seq := binary.BigEndian.Uint64(r.Value)
			where[seq] = append(where[seq], place{p, r.Offset})
			byOffset[p][r.Offset] = seq
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
			got, ok := byOffset[p][a.Offset]
			switch {
			case ok && got == a.Seq:
			case len(where[a.Seq]) == 0:
				add("partition %d: acknowledged sequence %d (offset %d) is missing", p, a.Seq, a.Offset)
			default:
				add("partition %d: acknowledged sequence %d at offset %d, found at %v", p, a.Seq, a.Offset, where[a.Seq])
			}
			if a.Offset <= prev {
				add("partition %d: sequence %d acknowledged at offset %d after offset %d", p, a.Seq, a.Offset, prev)
			}
			prev = a.Offset
		}
	}
	sort.Strings(problems)
	return problems
}

// Acked returns the acknowledged records so far, per partition in
// acknowledgement order, and the partitions on which the client detected
// data loss.
func (p *Producer) Acked() (acked map[int32][]Ack, lost []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	acked = make(map[int32][]Ack, len(p.acked))
	for k, v := range p.acked {
		acked[k] = append([]Ack(nil), v...)
	}
	return acked, append([]string(nil), p.lost...)
}
