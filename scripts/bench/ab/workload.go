package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// shape is what a produce run sends: the A/B bench is 6 partitions,
// 1 MiB batches, linger 5 ms.
type shape struct {
	size        int // value bytes of each record
	count       int // records
	partitions  int32
	acks        string // "1" or "all"
	batchBytes  int32
	linger      time.Duration
	producers   int  // concurrent clients, each sending count/producers records
	rate        int  // records/s over all producers; 0 sends as fast as possible
	maxInFlight int  // produce requests in flight per broker and client; 0 keeps franz-go's default
	serial      bool // each producer waits for a record's acknowledgement before sending the next
}

func (s shape) String() string {
	return fmt.Sprintf("%d B x %d, %d partitions, acks=%s", s.size, s.count, s.partitions, s.acks)
}

type produced struct {
	recordsPerSec, mbPerSec float64
	p50, p99, p999, max     time.Duration
}

func ackOpt(acks string) (kgo.Opt, bool, error) {
	switch acks {
	case "1":
		return kgo.RequiredAcks(kgo.LeaderAck()), false, nil
	case "all", "-1":
		return kgo.RequiredAcks(kgo.AllISRAcks()), true, nil
	case "0":
		return kgo.RequiredAcks(kgo.NoAck()), false, nil
	}
	return nil, false, fmt.Errorf("acks %q is not 0, 1 or all", acks)
}

// produce sends s to topic on addr and measures the rate from the first
// record to the last acknowledgement, and each record's latency from the
// Produce call to its acknowledgement.
func produce(ctx context.Context, addr, topic string, s shape) (produced, error) {
	acks, idem, err := ackOpt(s.acks)
	if err != nil {
		return produced{}, err
	}
	producers := max(s.producers, 1)
	hist := hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3)
	var histMu sync.Mutex
	var firstErr atomic.Pointer[error]
	value := make([]byte, s.size)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	clients := make([]*kgo.Client, producers)
	for i := range clients {
		opts := []kgo.Opt{kgo.SeedBrokers(addr), acks, kgo.DefaultProduceTopic(topic),
			kgo.ProducerBatchMaxBytes(s.batchBytes), kgo.ProducerLinger(s.linger),
			kgo.ProducerBatchCompression(kgo.NoCompression())}
		if !idem {
			opts = append(opts, kgo.DisableIdempotentWrite())
		}
		if s.maxInFlight > 0 {
			opts = append(opts, kgo.MaxProduceRequestsInflightPerBroker(s.maxInFlight))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return produced{}, err
		}
		defer cl.Close()
		// Metadata first, so the clock does not count the first lookup.
		if err := cl.Ping(ctx); err != nil {
			return produced{}, err
		}
		clients[i] = cl
	}
	var wg sync.WaitGroup
	start := time.Now()
	for i, cl := range clients {
		n := s.count / producers
		if i == 0 {
			n += s.count % producers
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var interval time.Duration
			if s.rate > 0 {
				interval = time.Duration(float64(time.Second) * float64(producers) / float64(s.rate))
			}
			next := time.Now()
			for j := 0; j < n && ctx.Err() == nil; j++ {
				if interval > 0 {
					if d := time.Until(next); d > 0 {
						time.Sleep(d)
					}
					next = next.Add(interval)
				}
				sent := time.Now()
				done := func(_ *kgo.Record, err error) {
					if err != nil {
						firstErr.CompareAndSwap(nil, &err)
						return
					}
					histMu.Lock()
					_ = hist.RecordValue(time.Since(sent).Microseconds())
					histMu.Unlock()
				}
				if s.serial {
					r := cl.ProduceSync(ctx, &kgo.Record{Value: value})
					done(nil, r.FirstErr())
					continue
				}
				cl.Produce(ctx, &kgo.Record{Value: value}, done)
			}
			if err := cl.Flush(ctx); err != nil {
				firstErr.CompareAndSwap(nil, &err)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if p := firstErr.Load(); p != nil {
		return produced{}, *p
	}
	if err := ctx.Err(); err != nil {
		return produced{}, err
	}
	us := func(q float64) time.Duration { return time.Duration(hist.ValueAtQuantile(q)) * time.Microsecond }
	return produced{
		recordsPerSec: float64(s.count) / elapsed.Seconds(),
		mbPerSec:      float64(s.count) * float64(s.size) / (1 << 20) / elapsed.Seconds(),
		p50:           us(50), p99: us(99), p999: us(99.9), max: time.Duration(hist.Max()) * time.Microsecond,
	}, nil
}

type consumed struct {
	recordsPerSec, mbPerSec float64
}

// consume reads count records from the start of the given partitions of
// topic (all of them when parts is nil) with a direct (group-less) consumer.
func consume(ctx context.Context, addr, topic string, parts []int32, count int) (consumed, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.FetchMaxBytes(64 << 20), kgo.FetchMaxPartitionBytes(8 << 20)}
	if parts == nil {
		opts = append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	} else {
		m := map[int32]kgo.Offset{}
		for _, p := range parts {
			m[p] = kgo.NewOffset().AtStart()
		}
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: m}))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return consumed{}, err
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err != nil {
		return consumed{}, err
	}
	start := time.Now()
	n, bytes := 0, 0
	for n < count {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return consumed{}, err
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return consumed{}, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			bytes += len(r.Value)
		})
	}
	elapsed := time.Since(start)
	return consumed{recordsPerSec: float64(n) / elapsed.Seconds(), mbPerSec: float64(bytes) / (1 << 20) / elapsed.Seconds()}, nil
}

// createTopic creates topic with RF rf and waits until every partition has a
// leader that answers.
func createTopic(ctx context.Context, addr, topic string, partitions int32, rf int16, configs map[string]*string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	res, err := adm.CreateTopic(ctx, partitions, rf, configs, topic)
	if err != nil {
		return err
	}
	if res.Err != nil {
		return fmt.Errorf("create topic %s: %w", topic, res.Err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		offs, err := adm.ListEndOffsets(ctx, topic)
		ok := err == nil && offs.Error() == nil
		if ok {
			n := 0
			offs.Each(func(kadm.ListedOffset) { n++ })
			ok = n == int(partitions)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.Join(fmt.Errorf("topic %s: partitions not all led after 30 s", topic), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func deleteTopic(ctx context.Context, addr, topic string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	res, err := kadm.NewClient(cl).DeleteTopics(ctx, topic)
	if err != nil {
		return err
	}
	return res.Error()
}

// median of xs (which it sorts).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// recordsIn is the number of offsets in the given partitions of topic (end
// minus start offset).
func recordsIn(ctx context.Context, addr, topic string, parts []int32) (int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range parts {
		e, ok1 := ends.Lookup(topic, p)
		s, ok2 := starts.Lookup(topic, p)
		if !ok1 || !ok2 || e.Err != nil || s.Err != nil {
			return 0, fmt.Errorf("offsets of %s/%d: %v %v", topic, p, e.Err, s.Err)
		}
		n += int(e.Offset - s.Offset)
	}
	return n, nil
}
