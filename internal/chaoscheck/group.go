package chaoscheck

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Group is a consumer-group workload: members of one group read a topic
// and commit what they processed after every poll, while a monitor reads the
// group's committed offsets. It checks that no partition is owned by two
// members at the same generation, that committed offsets never go back, and,
// at the end, that every record of the final log was processed at least
// once, with the value the log holds.
//
// The members use the eager range balancer, so that each generation's whole
// assignment is known from OnPartitionsAssigned.
type Group struct {
	newClient func(...kgo.Opt) *kgo.Client
	group     string
	topic     string

	mu         sync.Mutex
	processed  map[int32]map[int64][]byte
	owners     map[int32]map[int32]string // generation -> partition -> member
	committed  map[int32]int64            // the highest committed offset the monitor saw
	violations []string
	commits    int
	records    int
	rebalances int
	errs       map[string]int
}

// NewGroup prepares the workload of group on topic; clients come from
// newClient.
func NewGroup(newClient func(...kgo.Opt) *kgo.Client, group, topic string) *Group {
	return &Group{
		newClient: newClient, group: group, topic: topic,
		processed: map[int32]map[int64][]byte{},
		owners:    map[int32]map[int32]string{},
		committed: map[int32]int64{},
		errs:      map[string]int{},
	}
}

// Run runs members members and the offset monitor until ctx ends. Every
// churn (when positive) the oldest member leaves the group and a new one
// joins, so that the group rebalances besides the faults.
func (g *Group) Run(ctx context.Context, members int, churn time.Duration) {
	var wg sync.WaitGroup
	wg.Go(func() { g.monitor(ctx) })
	type member struct {
		stop context.CancelFunc
		done chan struct{}
	}
	start := func() member {
		mctx, stop := context.WithCancel(ctx)
		m := member{stop: stop, done: make(chan struct{})}
		go func() {
			defer close(m.done)
			g.member(mctx)
		}()
		return m
	}
	var ms []member
	for range members {
		ms = append(ms, start())
	}
	var tick <-chan time.Time
	if churn > 0 {
		t := time.NewTicker(churn)
		defer t.Stop()
		tick = t.C
	}
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-tick:
			ms[0].stop()
			<-ms[0].done
			ms = append(ms[1:], start())
		}
	}
	for _, m := range ms {
		<-m.done
	}
	wg.Wait()
}

func (g *Group) member(ctx context.Context) {
	cl := g.newClient(
		kgo.ConsumerGroup(g.group),
		kgo.ConsumeTopics(g.topic),
		kgo.Balancers(kgo.RangeBalancer()),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(10*time.Second),
		kgo.RebalanceTimeout(20*time.Second),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, c *kgo.Client, assigned map[string][]int32) {
			member, gen := c.GroupMetadata()
			g.assigned(member, gen, assigned[g.topic])
		}),
	)
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		g.mu.Lock()
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.Canceled) {
				g.errs[err.Error()]++
			}
		})
		fs.EachRecord(g.processLocked)
		g.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		if fs.NumRecords() == 0 {
			continue
		}
		// Committing is the member's acknowledgement of what it processed;
		// a failed commit is retried with the next poll's.
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := cl.CommitUncommittedOffsets(cctx)
		cancel()
		g.mu.Lock()
		if err != nil {
			if ctx.Err() == nil {
				g.errs["commit: "+err.Error()]++
			}
		} else {
			g.commits++
		}
		g.mu.Unlock()
	}
}

// assigned records that member owns partitions at generation gen.
func (g *Group) assigned(member string, gen int32, partitions []int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.rebalances++
	owners := g.owners[gen]
	if owners == nil {
		owners = map[int32]string{}
		g.owners[gen] = owners
	}
	for _, p := range partitions {
		if prev, ok := owners[p]; ok && prev != member {
			g.violations = append(g.violations, fmt.Sprintf("partition %d owned by members %s and %s at generation %d", p, prev, member, gen))
			continue
		}
		owners[p] = member
	}
}

func (g *Group) processLocked(r *kgo.Record) {
	g.records++
	seen := g.processed[r.Partition]
	if seen == nil {
		seen = map[int64][]byte{}
		g.processed[r.Partition] = seen
	}
	if prev, ok := seen[r.Offset]; ok {
		if string(prev) != string(r.Value) {
			g.violations = append(g.violations, fmt.Sprintf("partition %d offset %d: processed as %x and later as %x", r.Partition, r.Offset, prev, r.Value))
		}
		return
	}
	seen[r.Offset] = r.Value
}

// monitor reads the committed offsets every 100 ms; one lower than one read
// before is a violation.
func (g *Group) monitor(ctx context.Context) {
	adm := kadm.NewClient(g.newClient())
	defer adm.Close()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		offs, err := adm.FetchOffsets(rctx, g.group)
		cancel()
		if err != nil {
			continue
		}
		g.observe(offs)
	}
}

func (g *Group) observe(offs kadm.OffsetResponses) {
	g.mu.Lock()
	defer g.mu.Unlock()
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil || o.Topic != g.topic || o.At < 0 {
			return
		}
		if prev, ok := g.committed[o.Partition]; ok && o.At < prev {
			g.violations = append(g.violations, fmt.Sprintf("partition %d: committed offset went back from %d to %d", o.Partition, prev, o.At))
		}
		if prev, ok := g.committed[o.Partition]; !ok || o.At > prev {
			g.committed[o.Partition] = o.At
		}
	})
}

// Committed is the highest committed offset seen per partition.
func (g *Group) Committed() map[int32]int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[int32]int64, len(g.committed))
	for k, v := range g.committed {
		out[k] = v
	}
	return out
}

// CaughtUp is nil once the committed offsets reached ends (the high
// watermarks).
func (g *Group) CaughtUp(ends map[int32]int64) error {
	got := g.Committed()
	for p, end := range ends {
		if end > 0 && got[p] < end {
			return fmt.Errorf("partition %d committed up to %d of %d", p, got[p], end)
		}
	}
	return nil
}

// Check compares what the members processed with the final log: every
// record there was processed, with the same value. It returns those problems
// and the violations seen during the run.
func (g *Group) Check(final map[int32][]Stored) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	problems := append([]string(nil), g.violations...)
	for p, recs := range final {
		missing := 0
		for _, s := range recs {
			v, ok := g.processed[p][s.Offset]
			switch {
			case !ok:
				if missing < 5 {
					problems = append(problems, fmt.Sprintf("partition %d offset %d: never processed by the group", p, s.Offset))
				}
				missing++
			case string(v) != string(s.Value):
				problems = append(problems, fmt.Sprintf("partition %d offset %d: processed as %x, the log holds %x", p, s.Offset, v, s.Value))
			}
		}
		if missing > 5 {
			problems = append(problems, fmt.Sprintf("partition %d: %d records never processed by the group in all", p, missing))
		}
	}
	sort.Strings(problems)
	return problems
}

// Summary says what the group did.
func (g *Group) Summary() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := fmt.Sprintf("%d records processed, %d commits, %d assignments over %d generations, %d violations",
		g.records, g.commits, g.rebalances, len(g.owners), len(g.violations))
	keys := make([]string, 0, len(g.errs))
	for k := range g.errs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s += fmt.Sprintf("\n  %dx %s", g.errs[k], k)
	}
	return s
}
