package proctest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/internal/brokerproc"
	"github.com/ktoolhq/ktool/internal/testbin"
)

// TestCluster runs two brokers on a real ZooKeeper, kills one and starts it
// again on the same port and directories.
func TestCluster(t *testing.T) {
	bin, cleanup, err := testbin.Build()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	c := Cluster(t, brokerproc.ClusterSpec{Bin: bin, N: 2, FirstID: 1,
		Overrides: []string{"zookeeper.session.timeout.ms=6000"}}, "/proctest", 30*time.Second)
	if !slices.Equal(c.IDs(), []int32{1, 2}) || len(c.Addrs()) != 2 {
		t.Fatalf("ids %v, addrs %v", c.IDs(), c.Addrs())
	}
	live := func() []int32 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Broker(1).Addr()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		m, err := kadm.NewClient(cl).BrokerMetadata(ctx)
		if err != nil {
			return nil
		}
		return m.Brokers.NodeIDs()
	}
	waitLive := func(want []int32) {
		deadline := time.Now().Add(60 * time.Second)
		for got := live(); !slices.Equal(got, want); got = live() {
			if time.Now().After(deadline) {
				t.Fatalf("live brokers %v, want %v", got, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitLive([]int32{1, 2})
	if r := c.Broker(2).Ready(); r.Mode != "ZooKeeper "+c.ZooKeeper() {
		t.Fatalf("broker 2 runs in mode %q", r.Mode)
	}
	if err := c.Broker(2).Kill(); err != nil {
		t.Fatal(err)
	}
	waitLive([]int32{1})
	if err := c.Broker(2).Restart(); err != nil {
		t.Fatal(err)
	}
	waitLive([]int32{1, 2})
}
