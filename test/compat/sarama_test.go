package compat

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"
)

// saramaSCRAM is sarama's SCRAM client (sarama leaves the SCRAM
// implementation to the application).
type saramaSCRAM struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

func (s *saramaSCRAM) Begin(user, pass, authzID string) error {
	c, err := s.hash.NewClient(user, pass, authzID)
	if err != nil {
		return err
	}
	s.conv = c.NewConversation()
	return nil
}

func (s *saramaSCRAM) Step(challenge string) (string, error) { return s.conv.Step(challenge) }
func (s *saramaSCRAM) Done() bool                            { return s.conv.Done() }

// saramaConfig is sarama at the Kafka 2.8 protocol, logged in as a says, with
// an idempotent acks=all producer.
func saramaConfig(a goAuth) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.ClientID = "ktool-compat-sarama"
	cfg.Metadata.Retry.Max = 2
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Return.Successes = true
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	if a.tls != nil {
		cfg.Net.TLS.Enable, cfg.Net.TLS.Config = true, a.tls
	}
	if a.mech != "" {
		cfg.Net.SASL.Enable = true
		cfg.Net.SASL.Mechanism = sarama.SASLMechanism(a.mech)
		cfg.Net.SASL.User, cfg.Net.SASL.Password = a.user, a.pass
		switch a.mech {
		case "SCRAM-SHA-512":
			cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{hash: scram.SHA512} }
		case "SCRAM-SHA-256":
			cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{hash: scram.SHA256} }
		}
	}
	return cfg
}

// saramaProduce sends n records tagged tag with an idempotent acks=all
// producer and checks that each got a distinct offset and a producer id.
func saramaProduce(t *testing.T, name string, addrs []string, a goAuth, topic, tag string, n int) {
	t.Helper()
	p, err := sarama.NewSyncProducer(addrs, saramaConfig(a))
	if err != nil {
		t.Fatalf("%s: producer: %v", name, err)
	}
	defer p.Close()
	msgs := make([]*sarama.ProducerMessage, n)
	for i := range msgs {
		k, v := goKV(tag, i)
		msgs[i] = &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(k), Value: sarama.StringEncoder(v)}
	}
	if err := p.SendMessages(msgs); err != nil {
		t.Fatalf("%s: send: %v", name, err)
	}
	seen := map[[2]int64]bool{}
	for _, m := range msgs {
		at := [2]int64{int64(m.Partition), m.Offset}
		if seen[at] {
			t.Fatalf("%s: two records acknowledged at %s[%d]@%d", name, topic, m.Partition, m.Offset)
		}
		seen[at] = true
	}
}

// saramaHandler passes every record of its claims to out and marks it.
type saramaHandler struct{ out chan<- goRecord }

func (saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h saramaHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		h.out <- goRecord{m.Partition, m.Offset, string(m.Key), string(m.Value)}
		sess.MarkMessage(m, "")
	}
	return nil
}

// saramaGroupRun is a sarama consumer group member reading topic.
type saramaGroupRun struct {
	records chan goRecord
	errs    chan error
	cancel  context.CancelFunc
	done    chan struct{}
	group   sarama.ConsumerGroup
}

func saramaGroup(t *testing.T, name string, addrs []string, a goAuth, group, topic string) *saramaGroupRun {
	t.Helper()
	g, err := sarama.NewConsumerGroup(addrs, group, saramaConfig(a))
	if err != nil {
		t.Fatalf("%s: consumer group: %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &saramaGroupRun{records: make(chan goRecord, 10000), errs: make(chan error, 1), cancel: cancel, done: make(chan struct{}), group: g}
	go func() {
		defer close(r.done)
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{topic}, saramaHandler{r.records}); err != nil {
				r.errs <- err
				return
			}
		}
	}()
	t.Cleanup(r.stop)
	return r
}

// read waits for n records.
func (r *saramaGroupRun) read(t *testing.T, name string, n int) []goRecord {
	t.Helper()
	var got []goRecord
	timeout := time.After(45 * time.Second)
	for len(got) < n {
		select {
		case rec := <-r.records:
			got = append(got, rec)
		case err := <-r.errs:
			t.Fatalf("%s: consume: %v", name, err)
		case <-timeout:
			t.Fatalf("%s: read %d of %d records in 45s", name, len(got), n)
		}
	}
	return got
}

// stop leaves the group; it may be called more than once.
func (r *saramaGroupRun) stop() {
	r.cancel()
	<-r.done
	_ = r.group.Close()
}

// saramaRoundTrip produces n records to a new topic of addrs with sarama and
// reads them back in a sarama consumer group that commits them; refAddrs is
// a PLAINTEXT address for the franz-go referee.
func saramaRoundTrip(t *testing.T, addrs []string, refAddrs string, a goAuth, topic string, n int) {
	t.Helper()
	name := "sarama " + a.String()
	saramaProduce(t, name, addrs, a, topic, a.String(), n)
	g := saramaGroup(t, name, addrs, a, topic+"-group", topic)
	got := g.read(t, name, n)
	groupCommitted(t, name, refAddrs, topic+"-group", topic)
	g.stop()
	select {
	case rec := <-g.records:
		t.Fatalf("%s: a record past the %d written: %+v", name, n, rec)
	default:
	}
	checkGroupRead(t, name, refAddrs, topic, a.String(), n, true, got)
}

// TestSarama: on a three-broker ZooKeeper cluster, sarama's ClusterAdmin
// creates a topic (and is told it exists the second time), describes it and
// the cluster; an idempotent acks=all producer writes and a consumer group
// reads every record back in order and commits; ListConsumerGroups,
// DescribeConsumerGroups (with the member's decoded assignment) and
// ListConsumerGroupOffsets see the group; a transactional producer commits,
// aborts and commits, with a group's offsets in the first two (only the
// committed ones count), and read_committed and read_uncommitted consumers
// read exactly what each should.
func TestSarama(t *testing.T) {
	c := startCluster(t, 3)
	addrs := strings.Split(c.Addrs(), ",")
	plain := goAuth{}
	adm, err := sarama.NewClusterAdmin(addrs, saramaConfig(plain))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()

	const topic, group, n = "sarama", "sarama-group", 300
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 3}, false); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 3}, false); !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		t.Fatalf("CreateTopic of an existing topic: %v, want TOPIC_ALREADY_EXISTS", err)
	}
	topicOnEveryBroker(t, c, topic, 3)
	md, err := adm.DescribeTopics([]string{topic})
	if err != nil || len(md) != 1 || !errors.Is(md[0].Err, sarama.ErrNoError) || len(md[0].Partitions) != 3 {
		t.Fatalf("DescribeTopics: %v %+v", err, md)
	}
	for _, p := range md[0].Partitions {
		if len(p.Replicas) != 3 || len(p.Isr) != 3 || !slices.Contains(p.Replicas, p.Leader) {
			t.Fatalf("DescribeTopics: partition %+v", p)
		}
	}
	if topics, err := adm.ListTopics(); err != nil || topics[topic].NumPartitions != 3 || topics[topic].ReplicationFactor != 3 {
		t.Fatalf("ListTopics: %v %+v", err, topics[topic])
	}
	brokers, controller, err := adm.DescribeCluster()
	if err != nil || len(brokers) != 3 || c.broker(controller) == nil {
		t.Fatalf("DescribeCluster: %v, %d brokers, controller %d", err, len(brokers), controller)
	}

	saramaProduce(t, "sarama", addrs, plain, topic, "plain", n)
	g := saramaGroup(t, "sarama", addrs, plain, group, topic)
	got := g.read(t, "sarama", n)
	groupCommitted(t, "sarama", c.Addrs(), group, topic)
	groups, err := adm.ListConsumerGroups()
	if err != nil || groups[group] != "consumer" {
		t.Fatalf("ListConsumerGroups: %v %v", err, groups)
	}
	desc, err := adm.DescribeConsumerGroups([]string{group})
	if err != nil || len(desc) != 1 || desc[0].State != "Stable" || len(desc[0].Members) != 1 {
		t.Fatalf("DescribeConsumerGroups: %v %+v", err, desc)
	}
	for _, m := range desc[0].Members {
		as, err := m.GetMemberAssignment()
		if err != nil || as == nil || !slices.Equal(slices.Sorted(slices.Values(as.Topics[topic])), []int32{0, 1, 2}) {
			t.Fatalf("DescribeConsumerGroups: assignment %v %+v", err, as)
		}
	}
	offs, err := adm.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0, 1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	ends := endOffsets(t, c.Addrs(), topic)
	for p, end := range ends {
		if b := offs.GetBlock(topic, p); end > 0 && (b == nil || b.Offset != end) {
			t.Fatalf("ListConsumerGroupOffsets %s[%d]: %+v, want %d", topic, p, b, end)
		}
	}
	g.stop()
	checkGroupRead(t, "sarama", c.Addrs(), topic, "plain", n, true, got)

	saramaTransactions(t, c, addrs)
}

// saramaTransactions: a transactional producer commits c1, aborts a1 and
// commits c2 on one partition, c1 and a1 with offsets of a group
// (AddOffsetsToTxn, then TxnOffsetCommit as sarama commits): the group has
// c1's, not a1's; sarama's read_committed
// consumer reads c1 and c2, read_uncommitted all three, in order.
func saramaTransactions(t *testing.T, c *cluster, addrs []string) {
	t.Helper()
	const topic, n = "sarama-txn", 20
	createTopic(t, c.Addrs(), topic, 1, 3, nil)
	topicOnEveryBroker(t, c, topic, 1)
	cfg := saramaConfig(goAuth{})
	cfg.Producer.Transaction.ID = "sarama-txn"
	p, err := sarama.NewSyncProducer(addrs, cfg)
	if err != nil {
		t.Fatalf("transactional producer: %v", err)
	}
	defer p.Close()
	const group = "sarama-txn-group"
	for _, tx := range []struct {
		tag    string
		commit bool
		offset int64 // of group's input partition, committed in the transaction; 0 for none
	}{{"c1", true, 5}, {"a1", false, 9}, {"c2", true, 0}} {
		if err := p.BeginTxn(); err != nil {
			t.Fatalf("BeginTxn %s: %v", tx.tag, err)
		}
		msgs := make([]*sarama.ProducerMessage, n)
		for i := range msgs {
			msgs[i] = &sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(fmt.Sprintf("%s-%d", tx.tag, i))}
		}
		if err := p.SendMessages(msgs); err != nil {
			t.Fatalf("send %s: %v", tx.tag, err)
		}
		if tx.offset > 0 {
			// AddOffsetsToTxn and TxnOffsetCommit, as a consume-transform-produce
			// loop sends the offsets of its input.
			offs := map[string][]*sarama.PartitionOffsetMetadata{"sarama": {{Partition: 0, Offset: tx.offset, LeaderEpoch: -1}}}
			if err := p.AddOffsetsToTxn(offs, group); err != nil {
				t.Fatalf("AddOffsetsToTxn %s: %v", tx.tag, err)
			}
		}
		end := p.CommitTxn
		if !tx.commit {
			end = p.AbortTxn
		}
		if err := end(); err != nil {
			t.Fatalf("end transaction %s (commit %v): %v", tx.tag, tx.commit, err)
		}
	}
	// The group has the committed transaction's offset, not the aborted one's
	// (sarama sends a transaction's offsets only when it commits it).
	eventually(t, 30*time.Second, func() error {
		resp, err := adminClient(t, c.Addrs()).FetchOffsets(testCtx(t, 10*time.Second), group)
		if err != nil {
			return err
		}
		if o, ok := resp.Lookup("sarama", 0); !ok || o.Err != nil || o.At != 5 {
			return fmt.Errorf("group %s committed sarama[0] at %+v, want 5 (from the committed transaction)", group, o)
		}
		return nil
	})
	for _, tc := range []struct {
		isolation sarama.IsolationLevel
		want      []string
	}{
		{sarama.ReadCommitted, tagged(n, "c1", "c2")},
		{sarama.ReadUncommitted, tagged(n, "c1", "a1", "c2")},
	} {
		got := saramaReadPartition(t, addrs, topic, tc.isolation, len(tc.want))
		if !slices.Equal(got, tc.want) {
			t.Fatalf("sarama isolation %d read %v, want %v", tc.isolation, got, tc.want)
		}
	}
}

// saramaReadPartition reads n values of partition 0 of topic from the start.
func saramaReadPartition(t *testing.T, addrs []string, topic string, isolation sarama.IsolationLevel, n int) []string {
	t.Helper()
	cfg := saramaConfig(goAuth{})
	cfg.Consumer.IsolationLevel = isolation
	cons, err := sarama.NewConsumer(addrs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	pc, err := cons.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var out []string
	timeout := time.After(30 * time.Second)
	for len(out) < n {
		select {
		case m := <-pc.Messages():
			out = append(out, string(m.Value))
		case err := <-pc.Errors():
			t.Fatalf("isolation %d: %v", isolation, err)
		case <-timeout:
			t.Fatalf("isolation %d: read %d of %d in 30s: %v", isolation, len(out), n, out)
		}
	}
	return out
}

// TestSaramaSASL: sarama's idempotent producer and consumer group over
// SASL_SSL with SCRAM-SHA-512, SCRAM-SHA-256 and PLAIN, every record back in
// order; each login with a wrong password fails with SASL_AUTHENTICATION_FAILED.
func TestSaramaSASL(t *testing.T) {
	ctx := testCtx(t, 2*time.Minute)
	s := startSASL(ctx, t)
	for i, a := range goSASLCases(t, s) {
		topic := fmt.Sprintf("sarama-sasl-%d", i)
		createTopic(t, s.Addr(), topic, 3, 1, nil)
		saramaRoundTrip(t, []string{s.saslSSL}, s.Addr(), a, topic, 60)

		bad := a
		bad.pass = "wrong"
		cl, err := sarama.NewClient([]string{s.saslSSL}, saramaConfig(bad))
		if err == nil {
			cl.Close()
		}
		if !errors.Is(err, sarama.ErrSASLAuthenticationFailed) {
			t.Fatalf("sarama %s with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", a, err)
		}
	}
}
