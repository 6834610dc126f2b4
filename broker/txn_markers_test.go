package broker_test

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/broker/brokertest"
)

// TestTxnMarkersBatched: transactions that end together have their markers
// sent to the partition leader in fewer WriteTxnMarkers requests than there
// are transactions (the markers of those ending while a request is in
// flight go in the next one), and every marker lands: a read_committed
// consumer reads every transaction's record.
func TestTxnMarkersBatched(t *testing.T) {
	props := maps.Clone(txnProps)
	props["metrics.listener"] = "127.0.0.1:0"
	c := brokertest.NewCluster(t, 1, brokertest.WithProps(props))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const topic, n = "tx-batched", 40
	if _, err := c.Admin().CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	producers := make([]*kgo.Client, n)
	for i := range producers {
		producers[i] = txnProducer(t, c, fmt.Sprint("batched-", i))
		if err := producers[i].BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		r := &kgo.Record{Topic: topic, Partition: 0, Value: []byte(fmt.Sprint("v", i))}
		if err := producers[i].ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	addr := c.Broker(c.IDs()[0]).MetricsAddr()
	markerRequests := func() float64 {
		return value(scrape(t, addr), "ktool_broker_requests_total", map[string]string{"api": "WriteTxnMarkers"})
	}
	before := markerRequests()
	var ended sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, n)
	for _, p := range producers {
		ended.Add(1)
		go func() {
			defer ended.Done()
			<-start
			errs <- p.EndTransaction(ctx, kgo.TryCommit)
		}()
	}
	close(start)
	ended.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := consumeAll(t, c, topic, kgo.ReadCommitted(), n)
	if len(got) != n {
		t.Fatalf("read_committed read %d records, want %d: %v", len(got), n, got)
	}
	sent := markerRequests() - before
	t.Logf("%d transactions ended together: %.0f WriteTxnMarkers requests", n, sent)
	if sent < 1 || sent >= n {
		t.Fatalf("%.0f WriteTxnMarkers requests for %d transactions ending together, want fewer than one each", sent, n)
	}
}
