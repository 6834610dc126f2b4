package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	txnTopic = "chaos-txn"
	txnSize  = 5 // records per transaction
)

// TestTxnFaults: a transactional producer commits two transactions of known
// content and aborts the third, over and over, while a read_committed
// consumer follows, and the partition's leader (which the transaction
// coordinator's markers must reach) is SIGKILLed and restarted. Afterwards:
// no record of an aborted transaction was seen; every transaction seen was
// seen whole and in order; every acknowledged commit was seen; and the last
// stable offset reached the high watermark (no transaction hangs).
func TestTxnFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level chaos test: runs without -short")
	}
	t.Parallel()
	kills := int(envInt(t, "KTOOL_CHAOS_TXN_KILLS", 2))
	ctx := testContext(t, time.Duration(kills)*time.Minute+3*time.Minute)
	c := newCluster(t, 3, "/chaostxn", "transaction.state.log.replication.factor=3", "transaction.state.log.min.isr=2")
	c.createTopic(ctx, txnTopic, 1, 3)

	var mu sync.Mutex
	committed := map[int]bool{} // transactions whose commit was acknowledged
	aborted := map[int]bool{}   // whose abort was acknowledged
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var cl *kgo.Client
		defer func() {
			if cl != nil {
				cl.Close()
			}
		}()
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			default:
			}
			if cl == nil {
				cl = c.client(kgo.TransactionalID("chaos-txn"), kgo.DefaultProduceTopic(txnTopic),
					kgo.TransactionTimeout(10*time.Second), kgo.RecordDeliveryTimeout(20*time.Second))
			}
			commit := k%3 != 2
			err := runTxn(ctx, cl, k, commit)
			mu.Lock()
			switch {
			case err == nil && commit:
				committed[k] = true
			case err == nil:
				aborted[k] = true
			}
			mu.Unlock()
			if err != nil {
				// The outcome is unknown; a new producer of the id fences
				// this one and ends the transaction.
				cl.Close()
				cl = nil
				time.Sleep(200 * time.Millisecond)
			}
		}
	})
	stopProducing := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(stopProducing)

	var seen []string
	var seenMu sync.Mutex
	cons := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{txnTopic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	defer cons.Close()
	consCtx, stopConsuming := context.WithCancel(ctx)
	var consWG sync.WaitGroup
	consWG.Go(func() {
		for consCtx.Err() == nil {
			fs := cons.PollFetches(consCtx)
			seenMu.Lock()
			fs.EachRecord(func(r *kgo.Record) { seen = append(seen, string(r.Value)) })
			seenMu.Unlock()
		}
	})
	defer func() { stopConsuming(); consWG.Wait() }()

	adm := c.admin()
	for i := range kills {
		if err := poll(ctx, time.Minute, func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			if len(committed) < 2*(i+1) {
				return fmt.Errorf("%d transactions committed", len(committed))
			}
			return nil
		}); err != nil {
			t.Fatalf("kill %d: the producer made no progress: %v", i+1, err)
		}
		m, err := adm.Metadata(ctx, txnTopic)
		if err != nil {
			t.Fatal(err)
		}
		victim := m.Topics[txnTopic].Partitions[0].Leader
		c.kill(victim)
		if err := poll(ctx, 30*time.Second, func(ctx context.Context) error { return c.listedBy(ctx, victim, false) }); err != nil {
			t.Logf("kill %d: broker %d still listed: %v", i+1, victim, err)
		}
		c.start(victim)
		if err := c.awaitReady(victim); err != nil {
			t.Fatalf("kill %d: restart of broker %d: %v", i+1, victim, err)
		}
		t.Logf("kill %d/%d: partition leader %d", i+1, kills, victim)
	}
	if err := poll(ctx, time.Minute, func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if len(committed) < 2*kills+2 {
			return fmt.Errorf("%d transactions committed", len(committed))
		}
		return nil
	}); err != nil {
		t.Fatalf("the producer made no progress after the kills: %v", err)
	}
	stopProducing()

	// No transaction hangs: the LSO reaches the high watermark once the
	// producer stopped (an open one is aborted by its timeout).
	if err := poll(ctx, time.Minute, func(ctx context.Context) error {
		lso, err := adm.ListCommittedOffsets(ctx, txnTopic)
		if err != nil {
			return err
		}
		hw, err := adm.ListEndOffsets(ctx, txnTopic)
		if err != nil {
			return err
		}
		l, _ := lso.Lookup(txnTopic, 0)
		h, _ := hw.Lookup(txnTopic, 0)
		if l.Err != nil || h.Err != nil || l.Offset != h.Offset {
			return fmt.Errorf("last stable offset %d (%v), high watermark %d (%v)", l.Offset, l.Err, h.Offset, h.Err)
		}
		return nil
	}); err != nil {
		t.Fatalf("a transaction hangs: %v", err)
	}
	mu.Lock()
	wantSeen := len(committed)
	mu.Unlock()
	if err := poll(ctx, time.Minute, func(context.Context) error {
		seenMu.Lock()
		defer seenMu.Unlock()
		got := map[int]bool{}
		for _, v := range seen {
			var k, i int
			if _, err := fmt.Sscanf(v, "txn-%d-%d", &k, &i); err == nil {
				got[k] = true
			}
		}
		for k := range committed {
			if !got[k] {
				return fmt.Errorf("committed transaction %d not seen yet (%d of %d seen)", k, len(got), wantSeen)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	stopConsuming()
	consWG.Wait()
	if err := checkTxnReads(seen, aborted); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d transactions committed, %d aborted, %d records read committed", len(committed), len(aborted), len(seen))
}

func runTxn(ctx context.Context, cl *kgo.Client, k int, commit bool) error {
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	var errs []error
	for i := range txnSize {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "txn-%d-%d", k, i)}).FirstErr(); err != nil {
			errs = append(errs, err)
			break
		}
	}
	end := kgo.TransactionEndTry(commit && len(errs) == 0)
	if err := cl.EndTransaction(ctx, end); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 && !commit {
		return nil
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return nil
}

// checkTxnReads checks what a read_committed consumer read: no record of an
// aborted transaction, every transaction whole (records 0..txnSize-1 in a
// row) and transactions in the order they were produced.
func checkTxnReads(seen []string, aborted map[int]bool) error {
	last := -1
	for i := 0; i < len(seen); {
		var k, r int
		if _, err := fmt.Sscanf(seen[i], "txn-%d-%d", &k, &r); err != nil {
			return fmt.Errorf("record %d: %q", i, seen[i])
		}
		if aborted[k] {
			return fmt.Errorf("read record %q of aborted transaction %d", seen[i], k)
		}
		if k <= last {
			return fmt.Errorf("transaction %d read after %d", k, last)
		}
		for j := range txnSize {
			want := fmt.Sprintf("txn-%d-%d", k, j)
			if i+j >= len(seen) || seen[i+j] != want {
				return fmt.Errorf("transaction %d torn at record %d: %s", k, j, strings.Join(seen[i:min(i+txnSize, len(seen))], " "))
			}
		}
		last = k
		i += txnSize
	}
	return nil
}
