package broker_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/brokertest"
	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/batch"
)

func setQuota(t *testing.T, adm *kadm.Client, entity []kadm.ClientQuotaEntityComponent, key string, v float64) {
	t.Helper()
	res, err := adm.AlterClientQuotas(context.Background(), []kadm.AlterClientQuotaEntry{{Entity: entity, Ops: []kadm.AlterClientQuotaOp{{Key: key, Value: v}}}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("alter: %v %v", err, res)
	}
}

// TestQuotaMutesTheConnection sends a produce over its quota on a raw
// connection: the answer carries the throttle time, and the next request on
// that connection is not read until the throttle time has passed (KIP-219
// muting), while the same request from another client id is answered.
func TestQuotaMutesTheConnection(t *testing.T) {
	c := brokertest.NewCluster(t, 1)
	ctx := context.Background()
	adm := c.Admin()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "muted"); err != nil {
		t.Fatal(err)
	}
	setQuota(t, adm, []kadm.ClientQuotaEntityComponent{{Type: "client-id", Name: strp("slow")}}, "producer_byte_rate", 10000)
	cl := &protocol.Client{Addr: c.Broker(0).Addr(), ClientID: "slow"}
	defer cl.Close()
	// 115 KB against 10 KB/s, which lets a client send 10 s worth (100 KB)
	// at once: about 1.5 s owed.
	value := make([]byte, 115000)
	rec := batch.AppendRecord(nil, 0, 0, nil, value, nil)
	now := time.Now().UnixMilli()
	b := batch.Encode(batch.Header{PartitionLeaderEpoch: -1, FirstTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: 1}, rec)
	owed := time.Duration(len(b)-100000) * time.Second / 10000
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 7, 1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "muted"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = b
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	brokertest.Eventually(t, 10*time.Second, func() error {
		// The partition may still be electing its leader.
		r, err := cl.Request(ctx, req)
		if err != nil {
			return err
		}
		pr := r.(*kmsg.ProduceResponse)
		if ec := pr.Topics[0].Partitions[0].ErrorCode; ec != 0 {
			return fmt.Errorf("produce error %d", ec)
		}
		if got := time.Duration(pr.ThrottleMillis) * time.Millisecond; got != owed.Truncate(time.Millisecond) {
			t.Fatalf("throttle_time_ms = %d, want the %v the excess takes to drain", pr.ThrottleMillis, owed)
		}
		return nil
	})
	answered := time.Now()
	mreq := kmsg.NewPtrMetadataRequest()
	mreq.Version = 9
	if _, err := cl.Request(ctx, mreq); err != nil {
		t.Fatal(err)
	}
	// The mute began when the produce was handled, a little before its answer
	// arrived: the next request waits out nearly all of it.
	if waited := time.Since(answered); waited < owed*8/10 {
		t.Fatalf("the next request was answered %v after a %v throttle", waited, owed)
	}
}

// TestFetchQuotaSparesFollowers puts a tiny consumer_byte_rate on every client
// id and user: a consumer is throttled (throttle_time_ms, empty answers) but
// still reads, its fetches cut to what its quota allows in one window, while
// the follower replicates unthrottled. Many small batches are produced at once
// with acks=all: a follower held to 1000 B/s would fetch about one batch a
// second, fall replica.lag.time.max.ms behind and be dropped from the ISR
// (the produces then complete on the leader alone), so the ISR is watched, not
// only the acknowledgements.
func TestFetchQuotaSparesFollowers(t *testing.T) {
	c := brokertest.NewCluster(t, 2, brokertest.WithProps(map[string]string{"replica.lag.time.max.ms": "5000"}))
	ctx := context.Background()
	adm := c.Admin()
	if _, err := adm.CreateTopic(ctx, 1, 2, nil, "fq"); err != nil {
		t.Fatal(err)
	}
	setQuota(t, adm, []kadm.ClientQuotaEntityComponent{{Type: "client-id"}}, "consumer_byte_rate", 1000)
	setQuota(t, adm, []kadm.ClientQuotaEntityComponent{{Type: "user"}}, "consumer_byte_rate", 1000)
	p := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchMaxBytes(8<<10), kgo.ProducerLinger(0))
	defer p.Close()
	const n = 160
	value := make([]byte, 4000)
	pctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	var failed atomic.Value
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		p.Produce(pctx, &kgo.Record{Topic: "fq", Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	cancel()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("acks=all produce under a consumer quota: %v", err)
	}
	// Had the follower been throttled, the leader drops it about
	// replica.lag.time.max.ms after the first batches and it needs minutes to
	// catch up: it would be missing from the ISR now and for long after.
	for i := range 10 {
		if i > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		td, err := adm.ListTopics(ctx, "fq")
		if err != nil {
			t.Fatal(err)
		}
		if pd := td["fq"].Partitions[0]; len(pd.ISR) != 2 {
			t.Fatalf("the follower left the ISR under a consumer quota: replicas %v, isr %v", pd.Replicas, pd.ISR)
		}
	}
	var throttled atomic.Int64
	cons := c.Client(kgo.ConsumeTopics("fq"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.WithHooks(throttleHook(func(d time.Duration) { throttled.Add(int64(d)) })))
	defer cons.Close()
	got := 0
	deadline := time.Now().Add(20 * time.Second)
	for (got == 0 || throttled.Load() == 0) && time.Now().Before(deadline) {
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		fs := cons.PollFetches(fctx)
		cancel()
		got += fs.NumRecords()
	}
	if got == 0 {
		t.Fatal("the throttled consumer read nothing")
	}
	if throttled.Load() == 0 {
		t.Fatal("a consumer far over its quota was never throttled")
	}
	if got >= n {
		t.Fatalf("a consumer under 1000 B/s read all %d records of 4 KB at once", got)
	}
}

// TestRequestPercentageThrottles sets a request_percentage on the default user:
// responses of other requests than Produce and Fetch carry a throttle time too.
func TestRequestPercentageThrottles(t *testing.T) {
	c := brokertest.NewCluster(t, 1)
	adm := c.Admin()
	setQuota(t, adm, []kadm.ClientQuotaEntityComponent{{Type: "user"}}, "request_percentage", 0.0001)
	cl := &protocol.Client{Addr: c.Broker(0).Addr(), ClientID: "busy"}
	defer cl.Close()
	ctx := context.Background()
	brokertest.Eventually(t, 20*time.Second, func() error {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 9
		r, err := cl.Request(ctx, req)
		if err != nil {
			return err
		}
		if r.(*kmsg.MetadataResponse).ThrottleMillis == 0 {
			return fmt.Errorf("no throttle yet")
		}
		return nil
	})
}
