package broker_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/brokertest"
)

// TestReplicationThrottleRate: a replica added by a reassignment copies at
// the configured leader.replication.throttled.rate, and at the configured
// follower.replication.throttled.rate, within a tolerance. 4 MiB copy in well
// under a second unthrottled; at 512 KiB/s the copy's rate, measured from
// its first MiB (past the one second of burst the quota holds) over the next
// 1.5 MiB, must be 0.5-1.5 times the rate.
func TestReplicationThrottleRate(t *testing.T) {
	const rate = 512 << 10
	c := brokertest.NewCluster(t, 2, brokertest.WithProps(map[string]string{"replica.fetch.max.bytes": "65536"}))
	ctx := context.Background()
	adm := c.Admin()
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(64<<10))
	for _, side := range []struct {
		name, rateKey, listKey string
		broker                 int32 // whose rate is set: the leader (0) or the follower (1)
	}{
		{"leader", "leader.replication.throttled.rate", "leader.replication.throttled.replicas", 0},
		{"follower", "follower.replication.throttled.rate", "follower.replication.throttled.replicas", 1},
	} {
		t.Run(side.name, func(t *testing.T) {
			topic := "throttled-" + side.name
			create := kmsg.NewPtrCreateTopicsRequest()
			ct := kmsg.NewCreateTopicsRequestTopic()
			ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, -1, -1
			ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			ra.Replicas = []int32{0}
			ct.ReplicaAssignment = append(ct.ReplicaAssignment, ra)
			create.Topics, create.TimeoutMillis = append(create.Topics, ct), 10000
			if resp, err := create.RequestWith(ctx, cl); err != nil || resp.Topics[0].ErrorCode != 0 {
				t.Fatalf("create: %v %+v", err, resp)
			}
			value := make([]byte, 16<<10)
			var recs []*kgo.Record
			for range 256 {
				_, _ = rand.Read(value)
				recs = append(recs, &kgo.Record{Topic: topic, Value: append([]byte(nil), value...)})
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			// The replica broker 1 is to take, listed as the side's topic config
			// names it (partition:broker), and the side's rate on its broker.
			listed := fmt.Sprintf("0:%d", side.broker)
			if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: side.listKey, Value: &listed}}, topic); err != nil {
				t.Fatal(err)
			}
			r := fmt.Sprint(rate)
			if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: side.rateKey, Value: &r}}, side.broker); err != nil {
				t.Fatal(err)
			}
			var req kadm.AlterPartitionAssignmentsReq
			req.Assign(topic, 0, []int32{0, 1})
			res, err := adm.AlterPartitionAssignments(ctx, req)
			if err != nil || res.Error() != nil {
				t.Fatalf("reassign: %v %v", err, res.Error())
			}
			got := copyRate(t, adm, topic, 1<<20, 5<<19, 30*time.Second)
			t.Logf("%s throttle %d B/s: the copy ran at %.0f B/s (%.2f times)", side.name, rate, got, got/rate)
			if got < 0.5*rate || got > 1.5*rate {
				t.Errorf("%s throttle %d B/s: the copy ran at %.0f B/s", side.name, rate, got)
			}
		})
	}
}

// copyRate polls the size of topic's partition 0 on broker 1 until it has
// grown by span past from bytes and returns the rate between the last sample
// below from and the first at or past from+span.
func copyRate(t *testing.T, adm *kadm.Client, topic string, from, span int64, timeout time.Duration) float64 {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var startAt time.Time
	var startSize int64 = -1
	for {
		now := time.Now()
		ds, err := adm.DescribeBrokerLogDirs(context.Background(), 1, kadm.TopicsSet{topic: {0: {}}})
		if err != nil {
			t.Fatal(err)
		}
		size := int64(-1)
		if p, ok := ds.LookupPartition(topic, 0); ok {
			size = p.Size
		}
		switch {
		case size < from:
			startAt, startSize = now, max(size, 0)
		case size >= from+span && startSize >= 0:
			return float64(size-startSize) / now.Sub(startAt).Seconds()
		}
		if now.After(deadline) {
			t.Fatalf("after %v the copy holds %d bytes, short of %d", timeout, size, from+span)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
