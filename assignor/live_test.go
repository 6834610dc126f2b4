package assignor_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ktoolhq/ktool/assignor"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// leaderCounter counts the rebalances a balancer ran as group leader.
type leaderCounter struct {
	kgo.GroupBalancer
	led *atomic.Int32
}

func (l leaderCounter) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	l.led.Add(1)
	return l.GroupBalancer.MemberBalancer(members)
}

// ownership records which consumer owns which partition, from the group
// callbacks, and fails on any partition assigned while another consumer
// still owns it.
type ownership struct {
	t     *testing.T
	mu    sync.Mutex
	owner map[int32]int
}

func (o *ownership) assigned(who int, parts []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range parts {
		if other, taken := o.owner[p]; taken && other != who {
			o.t.Errorf("partition %d assigned to consumer %d while consumer %d owns it", p, who, other)
		}
		o.owner[p] = who
	}
}

func (o *ownership) released(who int, parts []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range parts {
		if o.owner[p] == who {
			delete(o.owner, p)
		}
	}
}

// owners returns how many partitions each consumer owns.
func (o *ownership) owners() map[int]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[int]int)
	for _, who := range o.owner {
		out[who]++
	}
	return out
}

// Three consumers using our assignor through the kgo adapter and one using
// kgo's own balancer of the same protocol share a group on a kfake broker
// and consume every record of a six-partition topic, no partition ever
// owned by two consumers at once.
func TestLiveGroupMixedBalancers(t *testing.T) {
	for _, c := range []struct {
		ours   assignor.Assignor
		theirs kgo.GroupBalancer
	}{
		{assignor.Range(), kgo.RangeBalancer()},
		{assignor.Sticky(), kgo.StickyBalancer()},
		{assignor.CooperativeSticky(), kgo.CooperativeStickyBalancer()},
	} {
		t.Run(c.ours.Name(), func(t *testing.T) { liveGroup(t, c.ours, c.theirs) })
	}
}

func liveGroup(t *testing.T, ours assignor.Assignor, theirs kgo.GroupBalancer) {
	const (
		topic      = "orders"
		partitions = 6
		perPart    = 50
		consumers  = 4
	)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	seeds := kgo.SeedBrokers(cluster.ListenAddrs()...)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	producer, err := kgo.NewClient(seeds, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	produce := func(round int) {
		t.Helper()
		var recs []*kgo.Record
		for p := range int32(partitions) {
			for i := range perPart / 2 {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%d-%d-%d", round, p, i)})
			}
		}
		if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	produce(0)

	own := &ownership{t: t, owner: make(map[int32]int)}
	var ourLeads atomic.Int32
	var (
		mu   sync.Mutex
		seen = make(map[[2]int64]bool) // partition, offset
	)
	pollCtx, stopPolling := context.WithCancel(ctx)
	var polling sync.WaitGroup
	clients := make([]*kgo.Client, 0, consumers)
	defer func() {
		stopPolling()
		polling.Wait()
		for _, cl := range clients {
			cl.Close()
		}
	}()
	// Consumers join one at a time, each join a rebalance that moves
	// partitions from the members already there to the newcomer.
	for i := range consumers {
		var balancer kgo.GroupBalancer = leaderCounter{assignor.Balancer(ours), &ourLeads}
		if i == consumers-1 {
			balancer = theirs
		}
		cl, err := kgo.NewClient(seeds,
			kgo.ConsumerGroup("mixed"),
			kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.Balancers(balancer),
			kgo.HeartbeatInterval(100*time.Millisecond),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { own.assigned(i, m[topic]) }),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { own.released(i, m[topic]) }),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { own.released(i, m[topic]) }),
		)
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, cl)
		polling.Add(1)
		go func() {
			defer polling.Done()
			for pollCtx.Err() == nil {
				fetches := cl.PollFetches(pollCtx)
				mu.Lock()
				fetches.EachRecord(func(r *kgo.Record) { seen[[2]int64{int64(r.Partition), r.Offset}] = true })
				mu.Unlock()
			}
		}()
		waitFor(t, ctx, fmt.Sprintf("%d consumers to share the partitions", i+1), func() bool {
			owners := own.owners()
			total := 0
			for _, n := range owners {
				total += n
			}
			return len(owners) == i+1 && total == partitions
		})
	}
	produce(1)
	waitFor(t, ctx, "every record to be consumed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == partitions*perPart
	})
	if ourLeads.Load() == 0 {
		t.Error("no rebalance was led by a member using assignor.Balancer")
	}
	counts := own.owners()
	for i := range consumers {
		if n := counts[i]; n < 1 || n > 2 {
			t.Errorf("consumer %d owns %d partitions, want 1 or 2", i, n)
		}
	}
}

// waitFor polls cond until it holds or ctx ends.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting for %s", what)
		case <-tick.C:
		}
	}
}
