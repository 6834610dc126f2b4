package compat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"
)

// kafkaGoSASL is kafka-go's mechanism for a (nil for PLAINTEXT).
func kafkaGoSASL(t *testing.T, a goAuth) sasl.Mechanism {
	t.Helper()
	switch a.mech {
	case "":
		return nil
	case "PLAIN":
		return plain.Mechanism{Username: a.user, Password: a.pass}
	}
	algo := scram.SHA512
	if a.mech == "SCRAM-SHA-256" {
		algo = scram.SHA256
	}
	m, err := scram.Mechanism(algo, a.user, a.pass)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// kafkaGoRoundTrip writes n records to topic with kafka-go's Writer
// (acks=all; kafka-go has no idempotent producer) and reads them back with a
// Reader in a consumer group that commits each record; refAddrs is a
// PLAINTEXT address for the franz-go referee.
func kafkaGoRoundTrip(t *testing.T, addrs []string, refAddrs string, a goAuth, topic string, n int) {
	t.Helper()
	name := "kafka-go " + a.String()
	ctx := testCtx(t, 90*time.Second)
	mech := kafkaGoSASL(t, a)
	w := &kafka.Writer{
		Addr:         kafka.TCP(addrs...),
		Topic:        topic,
		Balancer:     &kafka.Hash{},
		RequiredAcks: kafka.RequireAll,
		BatchTimeout: 10 * time.Millisecond,
		BatchSize:    n,
		Transport:    &kafka.Transport{TLS: a.tls, SASL: mech, ClientID: "ktool-compat-kafka-go"},
	}
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		k, v := goKV(a.String(), i)
		msgs[i] = kafka.Message{Key: []byte(k), Value: []byte(v)}
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("%s: write: %v", name, err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("%s: close writer: %v", name, err)
	}

	group := topic + "-group"
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:           addrs,
		GroupID:           group,
		Topic:             topic,
		StartOffset:       kafka.FirstOffset,
		MaxWait:           250 * time.Millisecond,
		HeartbeatInterval: time.Second,
		Dialer:            &kafka.Dialer{Timeout: 10 * time.Second, TLS: a.tls, SASLMechanism: mech, ClientID: "ktool-compat-kafka-go"},
	})
	defer r.Close()
	var got []goRecord
	rctx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	for len(got) < n {
		m, err := r.FetchMessage(rctx)
		if err != nil {
			t.Fatalf("%s: read %d of %d records: %v", name, len(got), n, err)
		}
		got = append(got, goRecord{int32(m.Partition), m.Offset, string(m.Key), string(m.Value)})
		if err := r.CommitMessages(rctx, m); err != nil {
			t.Fatalf("%s: commit: %v", name, err)
		}
	}
	groupCommitted(t, name, refAddrs, group, topic)
	// Nothing more is there to read.
	extra, cancelExtra := context.WithTimeout(ctx, time.Second)
	defer cancelExtra()
	if m, err := r.FetchMessage(extra); err == nil {
		t.Fatalf("%s: a record past the %d written: %s[%d]@%d %q", name, n, m.Topic, m.Partition, m.Offset, m.Value)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("%s: close reader: %v", name, err)
	}
	checkGroupRead(t, name, refAddrs, topic, a.String(), n, false, got)
}

// TestKafkaGo: segmentio/kafka-go on a three-broker ZooKeeper cluster: its
// Client creates a topic (three partitions, RF=3; TOPIC_ALREADY_EXISTS the
// second time) and reads it in Metadata; an acks=all Writer writes 300
// records and a Reader in a consumer group reads every record back in order
// and commits each; ListGroups (kafka-go asks every broker) lists the group
// once, and DescribeGroups finds it Empty after the reader left.
func TestKafkaGo(t *testing.T) {
	c := startCluster(t, 3)
	ctx := testCtx(t, 90*time.Second)
	addrs := strings.Split(c.Addrs(), ",")
	const topic, group = "kafka-go", "kafka-go-group"
	cl := &kafka.Client{Addr: kafka.TCP(addrs...), Timeout: 10 * time.Second}
	for i, want := range []error{nil, kafka.TopicAlreadyExists} {
		resp, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: 3, ReplicationFactor: 3}}})
		if err != nil || !errors.Is(resp.Errors[topic], want) {
			t.Fatalf("CreateTopics #%d: %v %v, want %v", i+1, err, resp, want)
		}
	}
	topicOnEveryBroker(t, c, topic, 3)
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil || len(md.Brokers) != 3 || len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 3 {
		t.Fatalf("Metadata: %v %+v", err, md)
	}
	for _, p := range md.Topics[0].Partitions {
		if p.Error != nil || len(p.Replicas) != 3 || len(p.Isr) != 3 || c.broker(int32(p.Leader.ID)) == nil {
			t.Fatalf("Metadata: partition %+v", p)
		}
	}

	kafkaGoRoundTrip(t, addrs, c.Addrs(), goAuth{}, topic, 300)

	// kafka-go asks every broker and joins the answers: the group is listed
	// once, by its coordinator.
	lg, err := cl.ListGroups(ctx, &kafka.ListGroupsRequest{})
	if err != nil || lg.Error != nil || len(lg.Groups) != 1 {
		t.Fatalf("ListGroups: %v %+v", err, lg)
	}
	if g := lg.Groups[0]; g.GroupID != group || g.ProtocolType != "consumer" || c.broker(int32(g.Coordinator)) == nil {
		t.Fatalf("ListGroups: %+v", g)
	}
	desc, err := cl.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil || len(desc.Groups) != 1 || desc.Groups[0].Error != nil || desc.Groups[0].GroupState != "Empty" {
		t.Fatalf("DescribeGroups: %v %+v", err, desc)
	}
}

// TestKafkaGoSASL: kafka-go's Writer and group Reader over SASL_SSL with
// SCRAM-SHA-512, SCRAM-SHA-256 and PLAIN, every record back in order; each
// login with a wrong password fails with SASL_AUTHENTICATION_FAILED.
func TestKafkaGoSASL(t *testing.T) {
	ctx := testCtx(t, 2*time.Minute)
	s := startSASL(ctx, t)
	for i, a := range goSASLCases(t, s) {
		topic := fmt.Sprintf("kafka-go-sasl-%d", i)
		createTopic(t, s.Addr(), topic, 3, 1, nil)
		kafkaGoRoundTrip(t, []string{s.saslSSL}, s.Addr(), a, topic, 60)

		bad := a
		bad.pass = "wrong"
		d := &kafka.Dialer{Timeout: 10 * time.Second, TLS: a.tls, SASLMechanism: kafkaGoSASL(t, bad)}
		conn, err := d.DialContext(ctx, "tcp", s.saslSSL)
		if err == nil {
			conn.Close()
		}
		if !errors.Is(err, kafka.SASLAuthenticationFailed) {
			t.Fatalf("kafka-go %s with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", a, err)
		}
	}
}
