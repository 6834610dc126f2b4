package chaos

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// gapTracker keeps, per partition, the longest time between two moments the
// partition was seen served (by servingMonitor, or by the producer's
// acknowledgements: it writes to every partition every few milliseconds with
// acks=all). Each gap is charged to the last fault that began before the gap
// ended.
type gapTracker struct {
	mu     sync.Mutex
	last   map[int32]time.Time
	faults []*faultWindow
	base   faultWindow // gaps before the first fault
}

// faultWindow is one fault and the worst gap charged to it.
type faultWindow struct {
	n      int
	kind   string
	what   string
	start  time.Time
	worst  time.Duration
	worstP int32
}

func newGapTracker() *gapTracker {
	return &gapTracker{last: map[int32]time.Time{}, base: faultWindow{kind: "none", worstP: -1}}
}

// begin marks the start of fault n of kind, described by what.
func (g *gapTracker) begin(n int, kind, what string) *faultWindow {
	g.mu.Lock()
	defer g.mu.Unlock()
	w := &faultWindow{n: n, kind: kind, what: what, start: time.Now(), worstP: -1}
	g.faults = append(g.faults, w)
	return w
}

// ack records an acknowledgement of partition p at at.
func (g *gapTracker) ack(p int32, at time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	prev, ok := g.last[p]
	g.last[p] = at
	if !ok {
		return
	}
	g.chargeLocked(p, prev, at)
}

func (g *gapTracker) chargeLocked(p int32, from, to time.Time) {
	gap := to.Sub(from)
	w := &g.base
	for i := len(g.faults) - 1; i >= 0; i-- {
		if g.faults[i].start.Before(to) {
			w = g.faults[i]
			break
		}
	}
	if gap > w.worst {
		w.worst, w.worstP = gap, p
	}
}

// worst returns the worst gap charged to window w so far and its partition.
func (g *gapTracker) worst(w *faultWindow) (time.Duration, int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return w.worst, w.worstP
}

// kindStat is the worst gap over all faults of one kind.
type kindStat struct {
	kind   string
	faults int
	worst  time.Duration
	fault  int // the fault it happened in
	p      int32
}

// byKind summarises the worst gap per fault kind, sorted by kind.
func (g *gapTracker) byKind() []kindStat {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := map[string]*kindStat{}
	for _, w := range g.faults {
		s := m[w.kind]
		if s == nil {
			s = &kindStat{kind: w.kind, p: -1}
			m[w.kind] = s
		}
		s.faults++
		if w.worst > s.worst {
			s.worst, s.fault, s.p = w.worst, w.n, w.worstP
		}
	}
	out := make([]kindStat, 0, len(m))
	for _, s := range m {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].kind < out[j].kind })
	return out
}

// formatGaps formats byKind for the log and the README.
func formatGaps(stats []kindStat) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-26s %6s %10s\n", "fault kind", "faults", "worst gap")
	for _, s := range stats {
		fmt.Fprintf(&b, "%-26s %6d %10s (fault %d, partition %d)\n", s.kind, s.faults, s.worst.Round(10*time.Millisecond), s.fault, s.p)
	}
	return b.String()
}

// servingMonitor measures, from the brokers' side, how long each partition
// goes without a serving leader: every 100 ms it asks the brokers not under a
// fault for the partition's leader (the state with the highest leader epoch
// among their answers) and sends that leader a ListOffsets at that epoch; an
// answer without error within a second counts as the partition being served
// then. Unlike the producer's acknowledgements, this does not wait on the
// client's own timeouts (a request stuck on a frozen broker).
type servingMonitor struct {
	c     *cluster
	topic string
	gaps  *gapTracker

	mu    sync.Mutex
	avoid int32 // the broker under a fault, -1 for none
}

func newServingMonitor(c *cluster, topic string) *servingMonitor {
	return &servingMonitor{c: c, topic: topic, gaps: newGapTracker(), avoid: -1}
}

// faulting marks id as under a fault (-1: none): its metadata is not asked.
func (m *servingMonitor) faulting(id int32) {
	m.mu.Lock()
	m.avoid = id
	m.mu.Unlock()
}

func (m *servingMonitor) run(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		m.probe(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

type leaderState struct {
	leader, epoch int32
}

func (m *servingMonitor) probe(ctx context.Context) {
	m.mu.Lock()
	avoid := m.avoid
	m.mu.Unlock()
	var mu sync.Mutex
	states := map[int32]leaderState{}
	var wg sync.WaitGroup
	for _, id := range m.c.ids() {
		if id == avoid {
			continue
		}
		wg.Go(func() {
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			resp, err := m.c.brokerMetadata(rctx, id, m.topic)
			if err != nil || len(resp.Topics) != 1 {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, p := range resp.Topics[0].Partitions {
				if p.ErrorCode != 0 || p.Leader < 0 {
					continue
				}
				if st, ok := states[p.Partition]; !ok || p.LeaderEpoch > st.epoch {
					states[p.Partition] = leaderState{p.Leader, p.LeaderEpoch}
				}
			}
		})
	}
	wg.Wait()
	byLeader := map[int32]map[int32]int32{} // leader -> partition -> epoch
	for p, st := range states {
		if byLeader[st.leader] == nil {
			byLeader[st.leader] = map[int32]int32{}
		}
		byLeader[st.leader][p] = st.epoch
	}
	for leader, parts := range byLeader {
		wg.Go(func() {
			req := kmsg.NewPtrListOffsetsRequest()
			req.ReplicaID = -1
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = m.topic
			for p, e := range parts {
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = p, e, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			resp, err := req.RequestWith(rctx, m.c.brokerClient(leader))
			if err != nil {
				return
			}
			now := time.Now()
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if p.ErrorCode == 0 {
						m.gaps.ack(p.Partition, now)
					}
				}
			}
		})
	}
	wg.Wait()
}
