package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// createTopic creates a topic with the given partitions and configs (replication 1)
// and fails the test on any error.
func createTopic(t testing.TB, adm *kadm.Client, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	resp, err := adm.CreateTopics(ctx, partitions, 1, configs, topic)
	if err != nil {
		t.Fatalf("CreateTopics %s: %v", topic, err)
	}
	if r := resp[topic]; r.Err != nil {
		t.Fatalf("CreateTopics %s: %v (%s)", topic, r.Err, r.ErrMessage)
	}
}

// consumeRange reads partition p of topic from offset start until it has n records,
// with a direct (groupless) consumer.
func consumeRange(t testing.TB, b *broker, topic string, p int32, start int64, n int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	opts = append([]kgo.Opt{
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(start)}}),
		kgo.FetchMaxWait(500 * time.Millisecond),
	}, opts...)
	cl := b.Client(t, opts...)
	defer cl.Close()
	ctx := testCtx(t, 60*time.Second)
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consuming %s/%d from %d: got %d of %d records before the deadline", topic, p, start, len(out), n)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("consuming %s/%d: %v", e.Topic, e.Partition, e.Err)
		}
		out = append(out, fs.Records()...)
	}
	if len(out) > n {
		t.Fatalf("consuming %s/%d from %d: wanted %d records, got %d", topic, p, start, n, len(out))
	}
	return out
}

// endOffsets lists the high watermarks of topic's partitions.
func endOffsets(ctx context.Context, adm *kadm.Client, topic string) (map[int32]int64, error) {
	lo, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	return listed(lo, topic)
}

// startOffsets lists the log start offsets of topic's partitions.
func startOffsets(ctx context.Context, adm *kadm.Client, topic string) (map[int32]int64, error) {
	lo, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	return listed(lo, topic)
}

func listed(lo kadm.ListedOffsets, topic string) (map[int32]int64, error) {
	if err := lo.Error(); err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for p, o := range lo[topic] {
		out[p] = o.Offset
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no partitions listed for %s", topic)
	}
	return out, nil
}
