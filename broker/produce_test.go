package broker_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/broker/brokertest"
)

// TestAcksAllWokenByFollowerFetch: an acks=all produce at RF=3 is answered
// when the followers' fetches carrying the new offsets arrive, not when a
// follower's long poll (replica.fetch.wait.max.ms, 20 s here) or any timer
// runs out. Each of the produces must take far less than the wait: a
// completion woken by the wait would take about 20 s each.
func TestAcksAllWokenByFollowerFetch(t *testing.T) {
	const wait = 20 * time.Second
	c := brokertest.NewCluster(t, 3, brokertest.WithProps(map[string]string{
		"replica.fetch.wait.max.ms":    fmt.Sprint(wait.Milliseconds()),
		"replica.lag.time.max.ms":      "120000",
		"auto.leader.rebalance.enable": "false",
	}))
	ctx := context.Background()
	if _, err := c.Admin().CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("3")}, "acks"); err != nil {
		t.Fatal(err)
	}
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
	// The first produce waits for the ISR to settle; the rest are measured.
	brokertest.Eventually(t, 60*time.Second, func() error {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return cl.ProduceSync(pctx, &kgo.Record{Topic: "acks", Value: []byte("warm")}).FirstErr()
	})
	var took []time.Duration
	for i := range 10 {
		// Let the followers park in their long poll first, so that each
		// produce has to wake them.
		time.Sleep(50 * time.Millisecond)
		start := time.Now()
		pctx, cancel := context.WithTimeout(ctx, 3*wait)
		err := cl.ProduceSync(pctx, &kgo.Record{Topic: "acks", Value: []byte(fmt.Sprint(i))}).FirstErr()
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	t.Logf("acks=all at RF=3 with replica.fetch.wait.max.ms=%v: fastest %v, median %v, slowest %v", wait, took[0], took[len(took)/2], took[len(took)-1])
	if slowest := took[len(took)-1]; slowest > wait/4 {
		t.Fatalf("an acks=all produce took %v with replica.fetch.wait.max.ms=%v: its answer was not woken by the follower fetch that moved the high watermark", slowest, wait)
	}
}

// TestProduceFramesReusedIntact: the broker reuses produce request buffers
// (protocol.Server.ReuseFrame); concurrent producers sending large, distinct
// batches, with acks=1, acks=all and flush.messages=1 answers parked on
// other goroutines, read every record back byte for byte.
func TestProduceFramesReusedIntact(t *testing.T) {
	c := brokertest.NewCluster(t, 1)
	ctx := context.Background()
	adm := c.Admin()
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "frames"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"flush.messages": kadm.StringPtr("1")}, "frames-durable"); err != nil {
		t.Fatal(err)
	}
	value := func(key uint32) []byte {
		r := rand.New(rand.NewPCG(uint64(key), 7))
		v := make([]byte, 8<<10+int(key%5000))
		for i := range v {
			v[i] = byte(r.Uint32())
		}
		return v
	}
	const perProducer = 400
	producers := []struct {
		topic string
		opts  []kgo.Opt
	}{
		{"frames", []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()}},
		{"frames", []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}},
		{"frames-durable", []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()}},
		{"frames-durable", []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}},
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(producers))
	for pi, p := range producers {
		cl := c.Client(append(p.opts, kgo.ProducerLinger(20*time.Millisecond), kgo.ProducerBatchMaxBytes(1<<20))...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var res kgo.ProduceResults
			var mu sync.Mutex
			var pwg sync.WaitGroup
			for i := range perProducer {
				key := uint32(pi*perProducer + i)
				k := binary.BigEndian.AppendUint32(nil, key)
				pwg.Add(1)
				cl.Produce(ctx, &kgo.Record{Topic: p.topic, Key: k, Value: value(key)}, func(r *kgo.Record, err error) {
					mu.Lock()
					res = append(res, kgo.ProduceResult{Record: r, Err: err})
					mu.Unlock()
					pwg.Done()
				})
			}
			pwg.Wait()
			errs <- res.FirstErr()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, topic := range []string{"frames", "frames-durable"} {
		cons := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		want := 2 * perProducer
		seen := map[uint32]bool{}
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		for len(seen) < want && cctx.Err() == nil {
			fs := cons.PollFetches(cctx)
			fs.EachRecord(func(r *kgo.Record) {
				key := binary.BigEndian.Uint32(r.Key)
				if !bytes.Equal(r.Value, value(key)) {
					t.Errorf("%s: record %d at %d/%d read back different (%d bytes)", topic, key, r.Partition, r.Offset, len(r.Value))
				}
				seen[key] = true
			})
		}
		cancel()
		if len(seen) != want {
			t.Fatalf("%s: read %d distinct records, want %d", topic, len(seen), want)
		}
	}
}
