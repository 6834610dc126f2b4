package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/brokertest"
)

// TestDescribeProducers: the partition leader lists every producer of a
// partition: an idempotent one with its last sequence and timestamp and no
// transaction, a transactional one with the coordinator epoch of its last
// marker and the first offset of its open transaction. A follower answers
// NOT_LEADER_OR_FOLLOWER, an unknown partition or topic
// UNKNOWN_TOPIC_OR_PARTITION, and a partition named twice is answered once.
func TestDescribeProducers(t *testing.T) {
	c := brokertest.NewCluster(t, 2, brokertest.WithProps(txnProps))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const topic = "dp"
	if _, err := c.Admin().CreateTopic(ctx, 1, 2, nil, topic); err != nil {
		t.Fatal(err)
	}

	idem := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ts := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for i := range 3 {
		r := &kgo.Record{Topic: topic, Partition: 0, Value: []byte("idem"), Timestamp: ts.Add(time.Duration(i) * time.Second)}
		if err := idem.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	tx := txnProducer(t, c, "dp-tx")
	if err := produceTxn(ctx, tx, topic, "committed", 2, true); err != nil {
		t.Fatal(err)
	}
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	open, err := tx.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("open")}).First()
	if err != nil {
		t.Fatal(err)
	}

	// Through the admin client, which asks the partition's leader.
	described, err := kadm.NewClient(c.Client()).DescribeProducers(ctx, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	dp := described[topic].Partitions[0]
	if dp.Err != nil || len(dp.ActiveProducers) != 2 {
		t.Fatalf("DescribeProducers: %+v", dp)
	}
	var sawIdem, sawTxn bool
	for _, p := range dp.ActiveProducers {
		switch {
		case p.CurrentTxnStartOffset < 0:
			sawIdem = true
			if p.ProducerEpoch != 0 || p.LastSequence != 2 || p.LastTimestamp != ts.Add(2*time.Second).UnixMilli() || p.CoordinatorEpoch != -1 {
				t.Errorf("idempotent producer: %+v", p)
			}
		default:
			sawTxn = true
			// Offsets 0-2 idempotent, 3-4 committed, 5 the commit marker, 6 the open transaction.
			if p.CurrentTxnStartOffset != open.Offset || open.Offset != 6 || p.LastSequence != 2 || p.CoordinatorEpoch < 0 {
				t.Errorf("transactional producer: %+v (open record at %d)", p, open.Offset)
			}
		}
	}
	if !sawIdem || !sawTxn {
		t.Fatalf("producers: %+v", dp.ActiveProducers)
	}

	// To each broker directly: the follower does not answer for the partition.
	md, err := kadm.NewClient(c.Client()).Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	leader := md.Topics[topic].Partitions[0].Leader
	req := kmsg.NewPtrDescribeProducersRequest()
	req.Topics = []kmsg.DescribeProducersRequestTopic{
		{Topic: topic, Partitions: []int32{0, 7, 0}},
		{Topic: "no-such-topic", Partitions: []int32{0}},
		{Topic: topic, Partitions: []int32{0}},
	}
	cl := c.Client()
	for _, id := range c.IDs() {
		resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Topics) != 2 || resp.Topics[0].Topic != topic || len(resp.Topics[0].Partitions) != 2 {
			t.Fatalf("broker %d: want one answer per topic and partition: %+v", id, resp.Topics)
		}
		want := map[int32]error{0: kerr.NotLeaderForPartition, 7: kerr.UnknownTopicOrPartition}
		if id == leader {
			want[0] = nil
		}
		for _, p := range resp.Topics[0].Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); !errors.Is(err, want[p.Partition]) {
				t.Errorf("broker %d, %s-%d: %v, want %v", id, topic, p.Partition, err, want[p.Partition])
			}
			if p.Partition == 0 && id == leader && len(p.ActiveProducers) != 2 {
				t.Errorf("broker %d, leader: %+v", id, p.ActiveProducers)
			}
		}
		if code := resp.Topics[1].Partitions[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("broker %d, unknown topic: %v", id, kerr.ErrorForCode(code))
		}
	}
}

// TestAuthorizerDescribeProducers: DescribeProducers needs READ on the topic,
// as Kafka's (DESCRIBE is not enough), else each of its partitions is
// TOPIC_AUTHORIZATION_FAILED, whether or not the topic exists.
func TestAuthorizerDescribeProducers(t *testing.T) {
	c := newACLCluster(t, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(c.as("admin")).CreateTopic(ctx, 1, 1, nil, "dp-acl"); err != nil {
		t.Fatal(err)
	}
	describe := func(cl *kgo.Client, topic string) int16 {
		req := kmsg.NewPtrDescribeProducersRequest()
		req.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: topic, Partitions: []int32{0}}}
		resp, err := req.RequestWith(ctx, cl.Broker(int(c.IDs()[0])))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	alice := c.as("alice")
	for _, topic := range []string{"dp-acl", "dp-missing"} {
		if code := describe(alice, topic); code != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("%s without ACLs: %v", topic, kerr.ErrorForCode(code))
		}
	}
	c.allow(ctx, kadm.NewACLs().Allow("User:alice").Topics("dp-acl").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpDescribe))
	// Once alice sees the topic in Metadata, the broker applied DESCRIBE.
	brokertest.Eventually(t, 10*time.Second, func() error {
		md, err := kadm.NewClient(alice).Metadata(ctx, "dp-acl")
		if err != nil {
			return err
		}
		return md.Topics["dp-acl"].Err
	})
	if code := describe(alice, "dp-acl"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("with DESCRIBE only: %v", kerr.ErrorForCode(code))
	}
	c.allow(ctx, kadm.NewACLs().Allow("User:alice").Topics("dp-acl").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpRead))
	brokertest.Eventually(t, 10*time.Second, func() error {
		return kerr.ErrorForCode(describe(alice, "dp-acl"))
	})
}
