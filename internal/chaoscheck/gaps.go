package chaoscheck

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// GapTracker keeps, per partition, the longest time between two moments the
// partition was seen served (by a monitor of the test, or by the producer's
// acknowledgements: it writes to every partition every few milliseconds with
// acks=all). Each gap is charged to the last fault that began before the gap
// ended.
type GapTracker struct {
	mu     sync.Mutex
	last   map[int32]time.Time
	faults []*FaultWindow
	base   FaultWindow // gaps before the first fault
}

// FaultWindow is one fault and the worst gap charged to it.
type FaultWindow struct {
	n      int
	kind   string
	what   string
	start  time.Time
	worst  time.Duration
	worstP int32
}

func NewGapTracker() *GapTracker {
	return &GapTracker{last: map[int32]time.Time{}, base: FaultWindow{kind: "none", worstP: -1}}
}

// Begin marks the start of fault n of kind, described by what.
func (g *GapTracker) Begin(n int, kind, what string) *FaultWindow {
	g.mu.Lock()
	defer g.mu.Unlock()
	w := &FaultWindow{n: n, kind: kind, what: what, start: time.Now(), worstP: -1}
	g.faults = append(g.faults, w)
	return w
}

// Ack records an acknowledgement of partition p at at.
func (g *GapTracker) Ack(p int32, at time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	prev, ok := g.last[p]
	g.last[p] = at
	if !ok {
		return
	}
	g.chargeLocked(p, prev, at)
}

func (g *GapTracker) chargeLocked(p int32, from, to time.Time) {
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

// Worst returns the worst gap charged to window w so far and its partition.
func (g *GapTracker) Worst(w *FaultWindow) (time.Duration, int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return w.worst, w.worstP
}

// KindStat is the worst gap over all faults of one kind.
type KindStat struct {
	Kind   string
	Faults int
	Worst  time.Duration
	Fault  int // the fault it happened in
	P      int32
}

// ByKind summarises the worst gap per fault kind, sorted by kind.
func (g *GapTracker) ByKind() []KindStat {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := map[string]*KindStat{}
	for _, w := range g.faults {
		s := m[w.kind]
		if s == nil {
			s = &KindStat{Kind: w.kind, P: -1}
			m[w.kind] = s
		}
		s.Faults++
		if w.worst > s.Worst {
			s.Worst, s.Fault, s.P = w.worst, w.n, w.worstP
		}
	}
	out := make([]KindStat, 0, len(m))
	for _, s := range m {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// FormatGaps formats byKind for the log and the README.
func FormatGaps(stats []KindStat) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-46s %6s %10s\n", "fault kind", "faults", "worst gap")
	for _, s := range stats {
		fmt.Fprintf(&b, "%-46s %6d %10s (fault %d, partition %d)\n", s.Kind, s.Faults, s.Worst.Round(10*time.Millisecond), s.Fault, s.P)
	}
	return b.String()
}
