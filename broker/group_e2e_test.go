package broker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/brokertest"
)

var groupProps = map[string]string{
	"group.initial.rebalance.delay.ms": "0",
	"offsets.topic.num.partitions":     "5",
}

// committed returns the group's committed offsets as topic/partition -> offset.
func committed(ctx context.Context, adm *kadm.Client, group string) (map[string]int64, error) {
	rs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for t, ps := range rs {
		for p, r := range ps {
			if r.Err != nil {
				return nil, r.Err
			}
			out[fmt.Sprintf("%s/%d", t, p)] = r.At
		}
	}
	return out, nil
}

func describeGroup(ctx context.Context, adm *kadm.Client, group string) (kadm.DescribedGroup, error) {
	ds, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return kadm.DescribedGroup{}, err
	}
	d := ds[group]
	return d, d.Err
}

// pollGroupN polls cl until it has n records.
func pollGroupN(t *testing.T, cl *kgo.Client, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", got, n, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
		got += fs.NumRecords()
	}
	if got != n {
		t.Fatalf("consumed %d records, want %d", got, n)
	}
}

func groupConsumer(c *brokertest.Cluster, group string, opts ...kgo.Opt) *kgo.Client {
	return c.Client(append([]kgo.Opt{
		kgo.ConsumerGroup(group), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
	}, opts...)...)
}

func TestConsumerGroupEndToEnd(t *testing.T) {
	c := brokertest.NewCluster(t, 1, brokertest.WithProps(groupProps))
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	prod := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 30 {
		produceSync(t, prod, "orders", int32(i%3), fmt.Sprint(i))
	}

	c1 := groupConsumer(c, "g1")
	pollGroupN(t, c1, 30)
	if err := c1.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"orders/0": 10, "orders/1": 10, "orders/2": 10}
	got, err := committed(ctx, adm, "g1")
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("committed %v (%v), want %v", got, err, want)
	}
	d, err := describeGroup(ctx, adm, "g1")
	if err != nil || d.State != "Stable" || d.ProtocolType != "consumer" || len(d.Members) != 1 {
		t.Fatalf("describe: %+v %v", d, err)
	}

	// A second member: the group rebalances and splits the partitions.
	c2 := groupConsumer(c, "g1")
	brokertest.Eventually(t, 30*time.Second, func() error {
		pollBriefly(c2)
		pollBriefly(c1)
		d, err := describeGroup(ctx, adm, "g1")
		if err != nil {
			return err
		}
		if d.State != "Stable" || len(d.Members) != 2 || len(d.AssignedPartitions()["orders"]) != 3 {
			return fmt.Errorf("state %s, %d members, assigned %v", d.State, len(d.Members), d.AssignedPartitions())
		}
		for _, m := range d.Members {
			if a, ok := m.Assigned.AsConsumer(); !ok || len(a.Topics) == 0 {
				return fmt.Errorf("member %s has nothing", m.MemberID)
			}
		}
		return nil
	})
	c2.Close()
	brokertest.Eventually(t, 30*time.Second, func() error {
		pollBriefly(c1)
		d, err := describeGroup(ctx, adm, "g1")
		if err != nil {
			return err
		}
		if d.State != "Stable" || len(d.Members) != 1 {
			return fmt.Errorf("after leave: state %s, %d members", d.State, len(d.Members))
		}
		return nil
	})
	c1.Close()
	brokertest.Eventually(t, 30*time.Second, func() error {
		ls, err := adm.ListGroups(ctx, "Empty")
		if err != nil {
			return err
		}
		if _, ok := ls["g1"]; !ok {
			return errors.New("g1 not listed as Empty")
		}
		return nil
	})

	// Reset as kafka-consumer-groups does: a plain commit to the empty group.
	var reset kadm.Offsets
	reset.AddOffset("orders", 0, 4, -1)
	if rs, err := adm.CommitOffsets(ctx, "g1", reset); err != nil || rs.Error() != nil {
		t.Fatalf("reset commit: %v %v", err, rs.Error())
	}
	want["orders/0"] = 4

	// Offsets and the group survive a restart: they are read back from the log.
	c.Stop(0)
	c.Restart(0)
	adm = c.Admin()
	brokertest.Eventually(t, 30*time.Second, func() error {
		got, err := committed(ctx, adm, "g1")
		if err != nil {
			return err
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("after restart %v, want %v", got, want)
		}
		return nil
	})
	// A new member resumes from the committed offsets.
	c3 := groupConsumer(c, "g1")
	pollGroupN(t, c3, 6)
	c3.Close()

	rs, err := adm.DeleteGroups(ctx, "g1")
	if err != nil || rs.Error() != nil {
		t.Fatalf("delete: %v %v", err, rs.Error())
	}
	if d, err := describeGroup(ctx, adm, "g1"); err != nil || d.State != "Dead" {
		t.Fatalf("deleted group: %+v %v", d, err)
	}
}

// pollBriefly lets a group member's client run its group duties for a moment.
func pollBriefly(cl *kgo.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	cl.PollFetches(ctx)
}

func TestGroupCoordinatorFailover(t *testing.T) {
	for _, store := range brokertest.Stores {
		t.Run(string(store), func(t *testing.T) {
			c := brokertest.NewCluster(t, 3, brokertest.WithStore(store), brokertest.WithProps(groupProps))
			adm := c.Admin()
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			if _, err := adm.CreateTopic(ctx, 2, 3, nil, "orders"); err != nil {
				t.Fatal(err)
			}
			prod := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
			for i := range 10 {
				produceSync(t, prod, "orders", int32(i%2), fmt.Sprint(i))
			}
			cons := groupConsumer(c, "fo")
			pollGroupN(t, cons, 10)
			if err := cons.CommitUncommittedOffsets(ctx); err != nil {
				t.Fatal(err)
			}
			cons.Close()
			want := map[string]int64{"orders/0": 5, "orders/1": 5}

			fc := adm.FindGroupCoordinators(ctx, "fo")
			coord := fc["fo"]
			if coord.Err != nil {
				t.Fatal(coord.Err)
			}
			c.Kill(coord.NodeID)
			adm = c.Admin()
			brokertest.Eventually(t, 60*time.Second, func() error {
				fc := adm.FindGroupCoordinators(ctx, "fo")
				if r := fc["fo"]; r.Err != nil || r.NodeID == coord.NodeID {
					return fmt.Errorf("coordinator %d (%v) after %d died; %s", r.NodeID, r.Err, coord.NodeID, offsetsLeaders(ctx, adm))
				}
				// A fresh client each time: the FindCoordinator a client sends
				// for FetchOffsets may reach a survivor that has not heard of
				// the death yet, and kgo keeps the dead coordinator it was
				// given while dialing it fails, as far as we can tell (once under load: a
				// minute of "connection refused" after the broker had moved).
				got, err := committed(ctx, c.Admin(), "fo")
				if err != nil {
					return err
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					return fmt.Errorf("offsets on the new coordinator %v, want %v", got, want)
				}
				return nil
			})
		})
	}
}

func TestGroupHandlersRaw(t *testing.T) {
	c := brokertest.NewCluster(t, 1, brokertest.WithProps(groupProps))
	cl := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}

	// The first FindCoordinator creates __consumer_offsets; clients retry until
	// its leaders are known.
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.Version = 4
	find.CoordinatorKeys = []string{"a", "b"}
	brokertest.Eventually(t, 30*time.Second, func() error {
		resp, err := find.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if len(resp.Coordinators) != 2 {
			return fmt.Errorf("%d coordinators for 2 keys", len(resp.Coordinators))
		}
		for _, co := range resp.Coordinators {
			if err := kerr.ErrorForCode(co.ErrorCode); err != nil {
				return fmt.Errorf("%s: %w", co.Key, err)
			}
			if co.NodeID != c.IDs()[0] || co.Port <= 0 {
				return fmt.Errorf("%s: coordinator %d %s:%d", co.Key, co.NodeID, co.Host, co.Port)
			}
		}
		return nil
	})
	for _, tc := range []struct {
		keyType int8
		key     string
		want    *kerr.Error
	}{{1, "", kerr.InvalidRequest}, {7, "x", kerr.InvalidRequest}} {
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.Version = 3
		r.CoordinatorKey, r.CoordinatorType = tc.key, tc.keyType
		resp, err := r.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != tc.want.Code || resp.NodeID != -1 || resp.ErrorMessage == nil {
			t.Fatalf("key type %d: %v node %d", tc.keyType, kerr.ErrorForCode(resp.ErrorCode), resp.NodeID)
		}
	}

	// Commits to unknown topics are refused per partition; the rest are stored.
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version = 2
	commit.Group = "raw"
	commit.Topics = []kmsg.OffsetCommitRequestTopic{
		{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 3}, {Partition: 9, Offset: 1}}},
		{Topic: "missing", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}},
	}
	var cresp *kmsg.OffsetCommitResponse
	brokertest.Eventually(t, 30*time.Second, func() error {
		var err error
		if cresp, err = commit.RequestWith(ctx, cl); err != nil {
			return err
		}
		return kerr.ErrorForCode(cresp.Topics[0].Partitions[0].ErrorCode)
	})
	if cresp.Topics[0].Partitions[1].ErrorCode != kerr.UnknownTopicOrPartition.Code ||
		cresp.Topics[1].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("commit to unknown partitions: %+v", cresp.Topics)
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version = 0
	fetch.Group = "raw"
	fetch.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "orders", Partitions: []int32{0}}}
	fresp, err := fetch.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if p := fresp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != 3 {
		t.Fatalf("v0 fetch: %+v", p)
	}
}

// offsetsLeaders describes __consumer_offsets' leadership, for failure messages.
func offsetsLeaders(ctx context.Context, adm *kadm.Client) string {
	md, err := adm.Metadata(ctx, "__consumer_offsets")
	if err != nil {
		return err.Error()
	}
	out := fmt.Sprintf("controller %d, brokers %v:", md.Controller, md.Brokers.NodeIDs())
	for p, pd := range md.Topics["__consumer_offsets"].Partitions {
		out += fmt.Sprintf(" %d:leader=%d,isr=%v", p, pd.Leader, pd.ISR)
	}
	return out
}

// TestDeletedTopicOffsetsGo: deleting a topic removes every group's committed
// offsets for it, so a topic created again under the same name is read from
// the reset position, not from the old topic's offsets.
func TestDeletedTopicOffsetsGo(t *testing.T) {
	c := brokertest.NewCluster(t, 1, brokertest.WithProps(groupProps))
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "again"); err != nil {
		t.Fatal(err)
	}
	os := kadm.Offsets{}
	os.AddOffset("again", 0, 10, -1)
	if r, err := adm.CommitOffsets(ctx, "g", os); err != nil || r.Error() != nil {
		t.Fatalf("commit: %v %v", err, r.Error())
	}
	if _, err := adm.DeleteTopics(ctx, "again"); err != nil {
		t.Fatal(err)
	}
	brokertest.Eventually(t, 20*time.Second, func() error {
		got, err := committed(ctx, adm, "g")
		if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
			return err
		}
		if _, ok := got["again/0"]; ok {
			return fmt.Errorf("offsets of the deleted topic still there: %v", got)
		}
		return nil
	})
}
