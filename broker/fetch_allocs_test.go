package broker_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/brokertest"
)

// fetchAllocsPerPartition is how many allocations reading and encoding a
// consumer fetch costs per partition: the difference between a fetch of all
// n partitions of a topic and one of a single partition, over n-1. With data,
// every partition has one record to send; without, each is asked from its end.
func fetchAllocsPerPartition(t *testing.T, withData bool) float64 {
	const topic, n = "allocs", 64
	c := brokertest.NewCluster(t, 1)
	ctx := context.Background()
	if _, err := c.Admin().CreateTopic(ctx, n, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	for p := range int32(n) {
		produceSync(t, cl, topic, p, "v")
	}
	fetch := func(parts int32) *kmsg.FetchRequest {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxBytes = 12, -1, 50<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		for p := range parts {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, 1<<20, -1
			if !withData {
				rp.FetchOffset = 1
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		return req
	}
	b := c.Broker(0)
	all, one := fetch(n), fetch(1)
	allocs := func(req *kmsg.FetchRequest) float64 {
		return testing.AllocsPerRun(200, func() { b.ReadAndEncodeFetch(req) })
	}
	return (allocs(all) - allocs(one)) / (n - 1)
}

// TestFetchAllocsPerPartition bounds the allocations a fetched partition
// costs on the consumer fetch path: with data, its header chunk; without,
// none (the fractions are the slices' amortised growth). Each partition used
// to cost a method-value closure for its send-failure callback too, and each
// with data another closure, with a heap copy of its region, for its release:
// 4.27 and 1.27 here then, 1.27 and 0.27 now.
func TestFetchAllocsPerPartition(t *testing.T) {
	for _, c := range []struct {
		name     string
		withData bool
		max      float64
	}{{"data", true, 2}, {"empty", false, 0.5}} {
		t.Run(c.name, func(t *testing.T) {
			got := fetchAllocsPerPartition(t, c.withData)
			t.Logf("%.2f allocations per fetched partition (%s)", got, c.name)
			if got > c.max {
				t.Fatalf("%.2f allocations per fetched partition, want at most %.1f", got, c.max)
			}
		})
	}
}
