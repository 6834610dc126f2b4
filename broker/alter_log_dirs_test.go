package broker_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/brokertest"
)

// TestAlterReplicaLogDirs moves broker 0's replicas of two partitions to its
// other log dir with kadm's AlterReplicaLogDirs while a producer writes with
// acks=all: the copy is throttled by replica.alter.log.dirs.io.max.bytes.per.second,
// so DescribeLogDirs shows the future replicas; lifting the throttle (a
// dynamic broker config) lets the moves finish, and every
// acknowledged record is read back from broker 0 once it leads. Kafka's
// refusals (an unknown dir, an unknown partition) are answered per partition.
func TestAlterReplicaLogDirs(t *testing.T) {
	for _, s := range brokertest.Stores {
		t.Run(string(s), func(t *testing.T) { testAlterReplicaLogDirs(t, s) })
	}
}

func testAlterReplicaLogDirs(t *testing.T, store brokertest.Store) {
	first, second := t.TempDir(), t.TempDir()
	c := brokertest.NewCluster(t, 3, brokertest.WithStore(store), brokertest.WithBrokerProps(func(id int32) map[string]string {
		if id != 0 {
			return nil
		}
		return map[string]string{"log.dirs": first + "," + second, "replica.alter.log.dirs.io.max.bytes.per.second": "262144"}
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := c.Admin()
	vers, err := adm.ApiVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	vers.Each(func(v kadm.BrokerApiVersions) {
		if lo, hi, ok := v.KeyVersions(34); !ok || lo != 0 || hi != 1 {
			t.Errorf("broker %d advertises AlterReplicaLogDirs %d-%d (%v), want 0-1", v.NodeID, lo, hi, ok)
		}
	})
	const topic = "move"
	// Two partitions on broker 0: the least-loaded placement puts one in each dir.
	if _, err := adm.CreateTopic(ctx, 2, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	where := func() (map[int32]string, map[int32]kadm.DescribedLogDirPartition) {
		dirs, err := adm.DescribeBrokerLogDirs(ctx, 0, nil)
		if err != nil {
			return nil, nil
		}
		cur, fut := map[int32]string{}, map[int32]kadm.DescribedLogDirPartition{}
		for _, d := range dirs {
			for _, p := range d.Topics[topic] {
				if p.IsFuture {
					fut[p.Partition] = p
				} else {
					cur[p.Partition] = d.Dir
				}
			}
		}
		return cur, fut
	}
	waitFor(t, "broker 0 to host both partitions", func() bool { cur, _ := where(); return len(cur) == 2 })
	cur, _ := where()

	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	defer cl.Close()
	value := make([]byte, 4<<10)
	rand.Read(value) // random: the client compresses
	var (
		mu    sync.Mutex
		acked = map[string]bool{}
	)
	produce := func(n int, tag string) {
		for i := range n {
			v := fmt.Sprintf("%s-%d-", tag, i)
			rec := &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: append([]byte(v), value...)}
			if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
				t.Errorf("produce %s: %v", v, err)
				return
			}
			mu.Lock()
			acked[v] = true
			mu.Unlock()
		}
	}
	produce(400, "before") // 1.6 MB

	var req kadm.AlterReplicaLogDirsReq
	target := map[int32]string{}
	for p, d := range cur {
		target[p] = first
		if d == first {
			target[p] = second
		}
		req.Add(target[p], kadm.TopicsSet{topic: {p: {}}})
	}
	req.Add("/no/such/dir", kadm.TopicsSet{"other": {0: {}}})
	req.Add(first, kadm.TopicsSet{"nosuchtopic": {0: {}}})
	res, err := adm.AlterBrokerReplicaLogDirs(ctx, 0, req)
	if err != nil {
		t.Fatal(err)
	}
	res.Each(func(r kadm.AlterReplicaLogDirsResponse) {
		var want error
		switch r.Topic {
		case "other":
			want = kerr.LogDirNotFound
		case "nosuchtopic":
			want = kerr.UnknownTopicOrPartition
		}
		if !errors.Is(r.Err, want) && !(want == nil && r.Err == nil) {
			t.Errorf("%s-%d to %s: %v, want %v", r.Topic, r.Partition, r.Dir, r.Err, want)
		}
	})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); produce(200, "during") }()
	waitFor(t, "DescribeLogDirs to show a future replica", func() bool {
		_, fut := where()
		for p, f := range fut {
			if f.Dir == target[p] && f.Size > 0 {
				return true
			}
		}
		return false
	})
	if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "replica.alter.log.dirs.io.max.bytes.per.second", Value: kadm.StringPtr("1073741824")}}, 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both moves to finish", func() bool {
		cur, fut := where()
		return len(fut) == 0 && cur[0] == target[0] && cur[1] == target[1]
	})
	wg.Wait()
	produce(50, "after")

	// Broker 0 leads both partitions, so the read below is of the moved logs.
	for _, id := range []int32{1, 2} {
		c.Kill(id)
	}
	waitFor(t, "broker 0 to lead both partitions", func() bool {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return false
		}
		ps := md.Topics[topic].Partitions
		return len(ps) == 2 && ps[0].Leader == 0 && ps[1].Leader == 0
	})
	rd := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer rd.Close()
	seen := map[string]bool{}
	next := map[int32]int64{}
	for len(seen) < len(acked) && ctx.Err() == nil {
		rd.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if r.Offset != next[r.Partition] {
				t.Fatalf("partition %d: offset %d after %d", r.Partition, r.Offset, next[r.Partition]-1)
			}
			next[r.Partition] = r.Offset + 1
			v := string(r.Value[:len(r.Value)-len(value)])
			if seen[v] {
				t.Fatalf("record %s read twice", v)
			}
			seen[v] = true
		})
	}
	for v := range acked {
		if !seen[v] {
			t.Fatalf("acknowledged record %s is missing after the move", v)
		}
	}
}

// TestPreferredDirForgottenWithItsTopic asks broker 1 to put a partition it
// does not host in its second log dir (REPLICA_NOT_AVAILABLE: kept for when
// it comes), then deletes the topic: no StopReplica reaches broker 1, so it is
// the deletion in UpdateMetadata that must drop the choice. The topic created
// again with its replica on broker 1 goes to the first dir, as any new
// partition of two empty dirs, not to the dir chosen for the old topic.
func TestPreferredDirForgottenWithItsTopic(t *testing.T) {
	for _, s := range brokertest.Stores {
		t.Run(string(s), func(t *testing.T) { testPreferredDirForgottenWithItsTopic(t, s) })
	}
}

func testPreferredDirForgottenWithItsTopic(t *testing.T, store brokertest.Store) {
	first, second := t.TempDir(), t.TempDir()
	c := brokertest.NewCluster(t, 2, brokertest.WithStore(store), brokertest.WithBrokerProps(func(id int32) map[string]string {
		if id != 1 {
			return nil
		}
		return map[string]string{"log.dirs": first + "," + second}
	}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := c.Admin()
	cl := c.Client()
	defer cl.Close()
	const topic = "churn"
	create := func(on int32) {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = 0, []int32{on}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 10000
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("create on broker %d: %v %+v", on, err, resp)
		}
	}
	create(0)
	var alter kadm.AlterReplicaLogDirsReq
	alter.Add(second, kadm.TopicsSet{topic: {0: {}}})
	brokertest.Eventually(t, 30*time.Second, func() error {
		res, err := adm.AlterBrokerReplicaLogDirs(ctx, 1, alter)
		if err != nil {
			return err
		}
		var got error
		res.Each(func(r kadm.AlterReplicaLogDirsResponse) { got = r.Err })
		if !errors.Is(got, kerr.ReplicaNotAvailable) {
			return fmt.Errorf("AlterReplicaLogDirs on broker 1: %v, want REPLICA_NOT_AVAILABLE", got)
		}
		return nil
	})
	if _, err := adm.DeleteTopics(ctx, topic); err != nil {
		t.Fatal(err)
	}
	brokertest.Eventually(t, 30*time.Second, func() error {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl.Broker(1))
		if err != nil {
			return err
		}
		if ec := resp.Topics[0].ErrorCode; ec != kerr.UnknownTopicOrPartition.Code {
			return fmt.Errorf("broker 1 still knows %s (error code %d)", topic, ec)
		}
		return nil
	})
	create(1)
	waitFor(t, "broker 1 to host the new "+topic, func() bool {
		dirs, err := adm.DescribeBrokerLogDirs(ctx, 1, nil)
		if err != nil {
			return false
		}
		for _, d := range dirs {
			if _, ok := d.Topics[topic][0]; ok {
				if d.Dir != first {
					t.Fatalf("the new %s-0 was created in %s, the dir chosen for the deleted topic, not %s", topic, d.Dir, first)
				}
				return true
			}
		}
		return false
	})
}
