package plugins_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/assignor"
)

// A kgo consumer group whose only balancer is an assignor served by a
// plugin process splits a topic between its members.
func TestPluginAssignorDrivesKgoGroup(t *testing.T) {
	ctx := testContext(t)
	cat := newCatalog(t)
	a, err := cat.Assignor(ctx, "cooperative-sticky")
	if err != nil {
		t.Fatal(err)
	}
	fake, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(6, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()

	var mu sync.Mutex
	owned := map[int]map[int32]bool{}
	var clients []*kgo.Client
	for i := range 2 {
		owned[i] = map[int32]bool{}
		cl, err := kgo.NewClient(kgo.SeedBrokers(fake.ListenAddrs()...), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("events"),
			kgo.Balancers(assignor.Balancer(a)),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				for _, p := range m["events"] {
					owned[i][p] = true
				}
			}),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				for _, p := range m["events"] {
					delete(owned[i], p)
				}
			}))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		clients = append(clients, cl)
		go func() {
			for ctx.Err() == nil && !cl.PollFetches(ctx).IsClientClosed() {
			}
		}()
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n0, n1 := len(owned[0]), len(owned[1])
		overlap := false
		for p := range owned[0] {
			overlap = overlap || owned[1][p]
		}
		mu.Unlock()
		if n0 == 3 && n1 == 3 && !overlap {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("members own %d and %d partitions (overlap %v), want 3 each", n0, n1, overlap)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
