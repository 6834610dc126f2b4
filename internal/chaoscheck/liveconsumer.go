package chaoscheck

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// liveRecord is what the live consumer saw at one offset.
type liveRecord struct {
	epoch int32
	value []byte
}

// LiveConsumer reads every partition of a topic from the start while the
// faults happen, without a group and without ever seeking, and keeps the
// leader epoch and value of every record it reads. The cluster must never
// move it back: a data-loss report (the client found its position past the
// end of the leader's epoch), an offset read twice or a record seen at one
// offset under two leader epochs is a violation.
type LiveConsumer struct {
	cl    *kgo.Client
	topic string

	mu         sync.Mutex
	seen       map[int32]map[int64]liveRecord
	next       map[int32]int64 // the offset after the last one read
	count      int
	violations []string
	errs       map[string]int
}

func NewLiveConsumer(newClient func(...kgo.Opt) *kgo.Client, topic string, partitions int32) *LiveConsumer {
	offsets := map[int32]kgo.Offset{}
	for p := range partitions {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	lc := &LiveConsumer{
		topic: topic,
		seen:  map[int32]map[int64]liveRecord{},
		next:  map[int32]int64{},
		errs:  map[string]int{},
	}
	for p := range partitions {
		lc.seen[p] = map[int64]liveRecord{}
	}
	lc.cl = newClient(
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	return lc
}

// Run polls until ctx ends.
func (lc *LiveConsumer) Run(ctx context.Context) {
	for ctx.Err() == nil {
		fs := lc.cl.PollFetches(ctx)
		lc.mu.Lock()
		fs.EachError(func(topic string, p int32, err error) {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return
			}
			var loss *kgo.ErrDataLoss
			if errors.As(err, &loss) {
				lc.violations = append(lc.violations, fmt.Sprintf("consumer data loss report: %v", loss))
				return
			}
			lc.errs[err.Error()]++
		})
		fs.EachRecord(lc.recordLocked)
		lc.mu.Unlock()
	}
}

// recordLocked checks and keeps one record; mu held.
func (lc *LiveConsumer) recordLocked(r *kgo.Record) {
	lc.count++
	add := func(format string, args ...any) {
		lc.violations = append(lc.violations, fmt.Sprintf("partition %d offset %d: ", r.Partition, r.Offset)+fmt.Sprintf(format, args...))
	}
	seen := lc.seen[r.Partition]
	if seen == nil {
		add("record of a partition the consumer does not read")
		return
	}
	if next, ok := lc.next[r.Partition]; ok && r.Offset < next {
		add("read again (the consumer had read up to %d and never seeks)", next-1)
	}
	if prev, ok := seen[r.Offset]; ok {
		if prev.epoch != r.LeaderEpoch {
			add("seen under leader epoch %d and then %d", prev.epoch, r.LeaderEpoch)
		}
		if string(prev.value) != string(r.Value) {
			add("value changed from %x to %x", prev.value, r.Value)
		}
	} else {
		seen[r.Offset] = liveRecord{epoch: r.LeaderEpoch, value: r.Value}
	}
	lc.next[r.Partition] = r.Offset + 1
}

// CompareFinal checks what the consumer saw while the faults happened
// against the final logs: every record it read is there, at the same offset,
// with the same value and leader epoch (nothing was rewritten).
func (lc *LiveConsumer) CompareFinal(final map[int32][]Stored) []string {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	var problems []string
	for p, seen := range lc.seen {
		byOffset := make(map[int64]Stored, len(final[p]))
		for _, s := range final[p] {
			byOffset[s.Offset] = s
		}
		offs := make([]int64, 0, len(seen))
		for o := range seen {
			offs = append(offs, o)
		}
		sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
		for _, o := range offs {
			live := seen[o]
			s, ok := byOffset[o]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("partition %d offset %d: read live (epoch %d) but not in the final log", p, o, live.epoch))
			case s.Epoch != live.epoch || string(s.Value) != string(live.value):
				problems = append(problems, fmt.Sprintf("partition %d offset %d: rewritten: read live as %x at epoch %d, final %x at epoch %d",
					p, o, live.value, live.epoch, s.Value, s.Epoch))
			}
		}
	}
	sort.Strings(problems)
	return problems
}

// Report returns the violations seen live, the records read and the
// distinct non-fatal fetch errors.
func (lc *LiveConsumer) Report() (violations []string, count int, errs map[string]int) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	errs = make(map[string]int, len(lc.errs))
	for k, v := range lc.errs {
		errs[k] = v
	}
	return append([]string(nil), lc.violations...), lc.count, errs
}
