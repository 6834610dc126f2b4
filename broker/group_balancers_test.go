package broker_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/assignor"
	"github.com/ktoolhq/ktool/broker/brokertest"
)

// ownership tracks which member holds each partition, failing when two members
// hold one at the same time.
type ownership struct {
	mu      sync.Mutex
	owner   map[int32]string
	granted map[string]int // assignments each member received
	errs    []error
}

func (o *ownership) assigned(member string, ps map[string][]int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range ps["churn"] {
		if cur, ok := o.owner[p]; ok && cur != member {
			o.errs = append(o.errs, fmt.Errorf("partition %d assigned to %s while %s owns it", p, member, cur))
		}
		o.owner[p] = member
		o.granted[member]++
	}
}

func (o *ownership) released(member string, ps map[string][]int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range ps["churn"] {
		if o.owner[p] == member {
			delete(o.owner, p)
		}
	}
}

// TestGroupBalancersUnderChurn runs a group with each of ktool's assignors (as kgo
// balancers) against the broker while members join and leave under load: every
// record is processed and no partition is owned by two members at once.
func TestGroupBalancersUnderChurn(t *testing.T) {
	for _, a := range assignor.Builtins() {
		t.Run(a.Name(), func(t *testing.T) {
			c := brokertest.NewCluster(t, 1, brokertest.WithProps(groupProps))
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			if _, err := c.Admin().CreateTopic(ctx, 6, 1, nil, "churn"); err != nil {
				t.Fatal(err)
			}
			const total = 3000
			prod := c.Client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
			next := 0
			produce := func(n int) { // load arrives in steps, while the group changes
				var recs []*kgo.Record
				for ; n > 0; n-- {
					recs = append(recs, &kgo.Record{Topic: "churn", Value: []byte(strconv.Itoa(next))})
					next++
				}
				if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
					t.Error(err)
				}
			}
			own := &ownership{owner: map[int32]string{}, granted: map[string]int{}}
			var seenMu sync.Mutex
			seen := map[string]bool{}
			member := func(name string) (*kgo.Client, chan struct{}) {
				cl := c.Client(
					kgo.ConsumerGroup("g-"+a.Name()), kgo.ConsumeTopics("churn"),
					kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
					kgo.Balancers(assignor.Balancer(a)),
					kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { own.assigned(name, ps) }),
					kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, ps map[string][]int32) {
						own.released(name, ps)
						_ = cl.CommitMarkedOffsets(ctx)
					}),
					kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { own.released(name, ps) }),
					kgo.AutoCommitMarks(),
				)
				done := make(chan struct{})
				go func() {
					defer close(done)
					for {
						fs := cl.PollFetches(ctx)
						if fs.IsClientClosed() || ctx.Err() != nil {
							return
						}
						fs.EachRecord(func(r *kgo.Record) {
							seenMu.Lock()
							seen[string(r.Value)] = true
							seenMu.Unlock()
							cl.MarkCommitRecords(r)
						})
					}
				}()
				return cl, done
			}
			count := func() int {
				seenMu.Lock()
				defer seenMu.Unlock()
				return len(seen)
			}
			waitCount := func(n int) {
				brokertest.Eventually(t, 60*time.Second, func() error {
					if got := count(); got < n {
						return fmt.Errorf("%d of %d records processed", got, n)
					}
					return nil
				})
			}
			m1, d1 := member("m1")
			produce(750)
			waitCount(300)
			m2, d2 := member("m2")
			produce(750)
			waitCount(1000)
			m3, d3 := member("m3")
			produce(750)
			waitCount(1800)
			m1.Close() // leaves the group mid-stream
			produce(750)
			<-d1
			waitCount(total)
			brokertest.Eventually(t, 30*time.Second, func() error {
				own.mu.Lock()
				defer own.mu.Unlock()
				for _, m := range []string{"m1", "m2", "m3"} {
					if own.granted[m] == 0 {
						return fmt.Errorf("member %s never got a partition (%v)", m, own.granted)
					}
				}
				return nil
			})
			m2.Close()
			m3.Close()
			<-d2
			<-d3
			own.mu.Lock()
			defer own.mu.Unlock()
			for _, err := range own.errs {
				t.Error(err)
			}
		})
	}
}

// TestGroupChainExactlyOnce chains two groups (in the style of franz-go's group
// ETL test): group A reads topic "in" and writes each record to "mid", group B
// reads "mid". With commits after processing and no member changes, each record
// is consumed exactly once per group and order within a partition is kept.
func TestGroupChainExactlyOnce(t *testing.T) {
	c := brokertest.NewCluster(t, 1, brokertest.WithProps(groupProps))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for _, topic := range []string{"in", "mid"} {
		if _, err := c.Admin().CreateTopic(ctx, 3, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	const total = 1500
	prod := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range total {
		p := int32(i % 3)
		prod.Produce(ctx, &kgo.Record{Topic: "in", Partition: p, Value: []byte(fmt.Sprintf("%d/%06d", p, i))}, nil)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	type stage struct {
		group, from, to string
		mu              sync.Mutex
		count           map[string]int
		last            map[int32]string
	}
	run := func(s *stage) {
		cl := c.Client(kgo.ConsumerGroup(s.group), kgo.ConsumeTopics(s.from),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
			kgo.RecordPartitioner(kgo.ManualPartitioner()))
		defer cl.Close()
		for {
			s.mu.Lock()
			n := len(s.count)
			s.mu.Unlock()
			if n >= total || ctx.Err() != nil {
				return
			}
			fs := cl.PollFetches(ctx)
			var out []*kgo.Record
			fs.EachRecord(func(r *kgo.Record) {
				s.mu.Lock()
				s.count[string(r.Value)]++
				if prev := s.last[r.Partition]; prev >= string(r.Value) && prev != "" {
					t.Errorf("%s: partition %d went from %s back to %s", s.group, r.Partition, prev, r.Value)
				}
				s.last[r.Partition] = string(r.Value)
				s.mu.Unlock()
				if s.to != "" {
					out = append(out, &kgo.Record{Topic: s.to, Partition: r.Partition, Value: r.Value})
				}
			})
			if len(out) > 0 {
				if err := cl.ProduceSync(ctx, out...).FirstErr(); err != nil {
					t.Errorf("%s: forwarding: %v", s.group, err)
					return
				}
			}
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				t.Errorf("%s: commit: %v", s.group, err)
				return
			}
		}
	}
	a := &stage{group: "etl-a", from: "in", to: "mid", count: map[string]int{}, last: map[int32]string{}}
	b := &stage{group: "etl-b", from: "mid", count: map[string]int{}, last: map[int32]string{}}
	var wg sync.WaitGroup
	for _, s := range []*stage{a, b} {
		wg.Add(1)
		go func() { defer wg.Done(); run(s) }()
	}
	wg.Wait()
	for _, s := range []*stage{a, b} {
		if len(s.count) != total {
			t.Fatalf("%s consumed %d distinct records, want %d", s.group, len(s.count), total)
		}
		for v, n := range s.count {
			if n != 1 {
				t.Fatalf("%s consumed %s %d times", s.group, v, n)
			}
		}
	}
}
