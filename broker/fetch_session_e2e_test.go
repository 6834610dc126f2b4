package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/broker/brokertest"
)

// fetchCounts sums, over every broker, the fetches and the partitions their
// requests and answers carried, for reader and kind.
type fetchCounts struct{ fetches, requested, answered float64 }

func countFetches(t *testing.T, c *brokertest.Cluster, reader, kind string) fetchCounts {
	t.Helper()
	var out fetchCounts
	for _, id := range c.IDs() {
		m := scrape(t, c.Broker(id).MetricsAddr())
		get := func(name string, labels map[string]string) float64 { return max(0, value(m, name, labels)) }
		out.fetches += get("ktool_broker_fetches_total", map[string]string{"reader": reader, "kind": kind})
		out.requested += get("ktool_broker_fetch_partitions_total", map[string]string{"reader": reader, "kind": kind, "part": "request"})
		out.answered += get("ktool_broker_fetch_partitions_total", map[string]string{"reader": reader, "kind": kind, "part": "response"})
	}
	return out
}

func (a fetchCounts) minus(b fetchCounts) fetchCounts {
	return fetchCounts{a.fetches - b.fetches, a.requested - b.requested, a.answered - b.answered}
}

// TestFetchSessionsIncremental: followers and a franz-go consumer fetch in
// sessions (KIP-227). Once caught up, a follower's fetch of 10 partitions
// from each leader lists none of them and is answered with none; a consumer
// of 30 partitions lists only those whose position moved.
func TestFetchSessionsIncremental(t *testing.T) {
	const parts = 30
	c := brokertest.NewCluster(t, 3, brokertest.WithProps(map[string]string{
		"metrics.listener":             "127.0.0.1:0",
		"auto.leader.rebalance.enable": "false",
		"replica.fetch.wait.max.ms":    "100",
	}))
	adm := c.Admin()
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, parts, 3, nil, "sessions"); err != nil {
		t.Fatal(err)
	}
	inSync(t, adm, "sessions", parts)
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(parts) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "sessions", Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// Followers: caught up and idle, their fetches are incremental and empty.
	before := countFetches(t, c, "replica", "incremental")
	beforeFull := countFetches(t, c, "replica", "full")
	var d fetchCounts
	brokertest.Eventually(t, 20*time.Second, func() error {
		d = countFetches(t, c, "replica", "incremental").minus(before)
		if d.fetches < 30 {
			return fmt.Errorf("%v incremental follower fetches so far", d.fetches)
		}
		return nil
	})
	full := countFetches(t, c, "replica", "full").minus(beforeFull)
	t.Logf("followers: %v incremental fetches listing %v partitions, answered with %v; %v full fetches",
		d.fetches, d.requested, d.answered, full.fetches)
	// Without sessions each of these fetches would list and answer 10 partitions.
	if d.requested > d.fetches/2 || d.answered > d.fetches/2 {
		t.Fatalf("idle followers' incremental fetches carried %v and %v partitions in %v fetches", d.requested, d.answered, d.fetches)
	}
	if full.fetches > 6 {
		t.Fatalf("%v full follower fetches while idle", full.fetches)
	}

	// A consumer of every partition.
	consumer := c.Client(kgo.ConsumeTopics("sessions"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	got := 0
	for got < parts {
		fs := consumer.PollFetches(cctx)
		if cctx.Err() != nil {
			t.Fatalf("consumed %d of %d records", got, parts)
		}
		got += fs.NumRecords()
	}
	// Its next fetch lists every partition (each position moved by one);
	// after that, none.
	first := countFetches(t, c, "consumer", "incremental")
	brokertest.Eventually(t, 20*time.Second, func() error {
		if n := countFetches(t, c, "consumer", "incremental").minus(first).fetches; n < 2 {
			return fmt.Errorf("%v incremental consumer fetches so far", n)
		}
		return nil
	})
	before = countFetches(t, c, "consumer", "incremental")
	brokertest.Eventually(t, 20*time.Second, func() error {
		d = countFetches(t, c, "consumer", "incremental").minus(before)
		if d.fetches < 10 {
			return fmt.Errorf("%v incremental consumer fetches so far", d.fetches)
		}
		return nil
	})
	t.Logf("consumer: %v incremental fetches listing %v partitions, answered with %v", d.fetches, d.requested, d.answered)
	if d.requested > d.fetches/2 || d.answered > d.fetches/2 {
		t.Fatalf("an idle consumer's incremental fetches carried %v and %v partitions in %v fetches", d.requested, d.answered, d.fetches)
	}
	// It still gets new records through its session.
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "sessions", Partition: 7, Value: []byte("w")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for {
		fs := consumer.PollFetches(cctx)
		if cctx.Err() != nil {
			t.Fatal("the record produced after the consumer went idle never came")
		}
		if fs.NumRecords() > 0 {
			break
		}
	}
}

// inSync waits until every partition of topic has its full ISR.
func inSync(t *testing.T, adm *kadm.Client, topic string, parts int) {
	t.Helper()
	brokertest.Eventually(t, 30*time.Second, func() error {
		td, err := adm.ListTopics(context.Background(), topic)
		if err != nil {
			return err
		}
		ps := td[topic].Partitions
		if len(ps) != parts {
			return fmt.Errorf("%d partitions", len(ps))
		}
		for _, p := range ps {
			if p.Leader < 0 || len(p.ISR) != len(p.Replicas) {
				return fmt.Errorf("partition %d: leader %d isr %v", p.Partition, p.Leader, p.ISR)
			}
		}
		return nil
	})
}
