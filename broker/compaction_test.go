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

// TestCompactedTopic: keys overwritten many times compact to their latest values,
// offsets unchanged, while the broker keeps serving; records without a key are refused.
func TestCompactedTopic(t *testing.T) {
	c := brokertest.NewCluster(t, 1, brokertest.WithProps(map[string]string{"log.cleaner.backoff.ms": "50"}))
	adm := c.Admin()
	ctx := context.Background()
	_, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{
		"cleanup.policy":            kadm.StringPtr("compact"),
		"segment.bytes":             kadm.StringPtr("2048"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
	}, "kv")
	if err != nil {
		t.Fatal(err)
	}
	cl := c.Client(kgo.ProducerLinger(0))
	const keys, rounds = 10, 60
	for r := range rounds {
		var recs []*kgo.Record
		for k := range keys {
			recs = append(recs, &kgo.Record{Topic: "kv", Key: []byte(fmt.Sprint("k", k)), Value: []byte(fmt.Sprint(r))})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "kv", Value: []byte("no key")}).FirstErr(); err == nil {
		t.Fatal("a record without a key was accepted by a compacted topic")
	}
	total := keys * rounds
	brokertest.Eventually(t, 20*time.Second, func() error {
		cons := c.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"kv": {0: kgo.NewOffset().AtStart()}}))
		defer cons.Close()
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		latest := map[string]string{}
		last := int64(-1)
		n := 0
		for last < int64(total-1) {
			fs := cons.PollFetches(pctx)
			if pctx.Err() != nil {
				return fmt.Errorf("read up to offset %d of %d", last, total-1)
			}
			var bad error
			fs.EachRecord(func(r *kgo.Record) {
				if r.Offset <= last {
					bad = fmt.Errorf("offset %d after %d", r.Offset, last)
				}
				last = r.Offset
				latest[string(r.Key)] = string(r.Value)
				n++
			})
			if bad != nil {
				return bad
			}
		}
		for k := range keys {
			if v := latest[fmt.Sprint("k", k)]; v != fmt.Sprint(rounds-1) {
				return fmt.Errorf("key k%d reads %q, want the latest %d", k, v, rounds-1)
			}
		}
		if n >= total/2 {
			return fmt.Errorf("%d of %d records still there: not compacted yet", n, total)
		}
		return nil
	})
}
