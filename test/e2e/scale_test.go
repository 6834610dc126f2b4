package e2e

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestManyPartitions creates a topic with 1,000 partitions, writes to each, and
// reads every one back after a SIGKILL and restart.
func TestManyPartitions(t *testing.T) {
	b := startBroker(t)
	adm := b.Admin(t)
	const topic, parts = "wide", 1000
	createTopic(t, adm, topic, parts, nil)
	prod := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := testCtx(t, 3*time.Minute)
	var rs []*kgo.Record
	for p := range parts {
		rs = append(rs, &kgo.Record{Partition: int32(p), Value: []byte(strconv.Itoa(p))})
	}
	if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("producing to %d partitions: %v", parts, err)
	}
	b.Kill(t)
	b.Restart(t)
	eventually(t, time.Minute, func() error {
		end, err := endOffsets(testCtx(t, 30*time.Second), adm, topic)
		if err != nil {
			return err
		}
		for p := range int32(parts) {
			if end[p] != 1 {
				return fmt.Errorf("partition %d ends at %d, want 1", p, end[p])
			}
		}
		return nil
	})
	cons := b.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[int32]bool{}
	for len(seen) < parts {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d partitions", len(seen), parts)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("%s/%d: %v", e.Topic, e.Partition, e.Err)
		}
		for _, r := range fs.Records() {
			if string(r.Value) != strconv.Itoa(int(r.Partition)) || seen[r.Partition] {
				t.Fatalf("partition %d offset %d holds %q (seen before: %v)", r.Partition, r.Offset, r.Value, seen[r.Partition])
			}
			seen[r.Partition] = true
		}
	}
}

// TestMinInsyncReplicas: acks=all needs the ISR to hold min.insync.replicas
// replicas; a one-broker ISR cannot satisfy 2, while acks=1 still succeeds.
func TestMinInsyncReplicas(t *testing.T) {
	b := startBroker(t)
	adm := b.Admin(t)
	const topic = "min-isr"
	createTopic(t, adm, topic, 1, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")})
	ctx := testCtx(t, 30*time.Second)
	all := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordRetries(0), kgo.RecordDeliveryTimeout(10*time.Second))
	if err := all.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Errorf("acks=all with ISR 1 < min.insync.replicas 2: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	one := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err := one.ProduceSync(ctx, &kgo.Record{Value: []byte("y")}).FirstErr(); err != nil {
		t.Errorf("acks=1 with ISR below min.insync.replicas: %v", err)
	}
	if end, err := endOffsets(ctx, adm, topic); err != nil || end[0] != 1 {
		t.Errorf("end offset %v (%v), want 1: only the acks=1 record is written", end, err)
	}
}
