package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func fetchRequest(topic string, offset int64, maxWait time.Duration) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(maxWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = 1 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = 1 << 20
	rp.LogStartOffset = -1
	rp.CurrentLeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// TestLongPollFetchWokenByAppend parks a raw fetch (max wait 10 s, min bytes 1) at
// the end of the log, checks it is parked, appends, and expects the answer carrying
// the new record before the 10 s max wait is over.
func TestLongPollFetchWokenByAppend(t *testing.T) {
	b := startBroker(t)
	adm := b.Admin(t)
	const topic = "long-poll"
	createTopic(t, adm, topic, 1, nil)
	prod := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx := testCtx(t, 30*time.Second)
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	const maxWait = 10 * time.Second
	rc := dialRaw(t, b.Addr())
	req := fetchRequest(topic, 1, maxWait)
	sent := time.Now()
	corr, err := rc.Send(req)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing to return yet: the broker must hold the fetch, not answer empty.
	if frame, err := rc.ReadFrame(500 * time.Millisecond); err == nil {
		resp, derr := decodeResponse(req, corr, frame)
		t.Fatalf("fetch with min bytes 1 at the log end answered at once: %v %+v", derr, resp)
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("waiting on a parked fetch: %v", err)
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("wakes the fetch")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	resp, err := rc.Receive(req, corr, time.Until(sent.Add(maxWait-time.Second)))
	if err != nil {
		t.Fatalf("fetch not answered before its max wait passed after an append: %v", err)
	}
	fr := resp.(*kmsg.FetchResponse)
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch response has %d topics", len(fr.Topics))
	}
	p := fr.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		t.Fatal(err)
	}
	if p.HighWatermark != 2 {
		t.Errorf("high watermark %d, want 2", p.HighWatermark)
	}
	recs, err := recordsOf(p.RecordBatches)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].offset != 1 || string(recs[0].value) != "wakes the fetch" {
		t.Fatalf("fetch returned %+v, want the record at offset 1", recs)
	}
}

// TestLongPollSessionFetchWokenByAppend: a fetch session whose last fetch
// waited its max wait (an idle follower's or consumer's) has its next fetch
// register for wake-ups while it reads, and park without a second read. That
// fetch, parked at the log end with a max wait of 10 s, is still answered
// with a record appended while it waits, before the 10 s are over.
func TestLongPollSessionFetchWokenByAppend(t *testing.T) {
	b := startBroker(t)
	adm := b.Admin(t)
	const topic = "long-poll-session"
	createTopic(t, adm, topic, 1, nil)
	prod := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx := testCtx(t, 30*time.Second)
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	rc := dialRaw(t, b.Addr())

	// A new session at the log end, answered empty at its 100 ms max wait.
	open := fetchRequest(topic, 1, 100*time.Millisecond)
	open.SessionEpoch = 0
	corr, err := rc.Send(open)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rc.Receive(open, corr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	first := resp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(first.ErrorCode); err != nil || first.SessionID == 0 {
		t.Fatalf("opening a fetch session: error %v, session id %d", err, first.SessionID)
	}

	// The session's next fetch lists nothing: the session holds the
	// partition at offset 1.
	const maxWait = 10 * time.Second
	req := fetchRequest(topic, 1, maxWait)
	req.Topics = nil
	req.SessionID, req.SessionEpoch = first.SessionID, 1
	sent := time.Now()
	if corr, err = rc.Send(req); err != nil {
		t.Fatal(err)
	}
	if frame, err := rc.ReadFrame(500 * time.Millisecond); err == nil {
		resp, derr := decodeResponse(req, corr, frame)
		t.Fatalf("incremental fetch at the log end answered at once: %v %+v", derr, resp)
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("waiting on a parked fetch: %v", err)
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("wakes the fetch")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	resp, err = rc.Receive(req, corr, time.Until(sent.Add(maxWait-time.Second)))
	if err != nil {
		t.Fatalf("session fetch not answered before its max wait passed after an append: %v", err)
	}
	fr := resp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(fr.ErrorCode); err != nil {
		t.Fatal(err)
	}
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch response has %d topics", len(fr.Topics))
	}
	recs, err := recordsOf(fr.Topics[0].Partitions[0].RecordBatches)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].offset != 1 || string(recs[0].value) != "wakes the fetch" {
		t.Fatalf("fetch returned %+v, want the record at offset 1", recs)
	}
}

// TestLongPollConsumerWokenByAppend is the same property through kgo: a consumer
// with FetchMaxWait 10 s gets a record produced while it waits before 10 s pass.
func TestLongPollConsumerWokenByAppend(t *testing.T) {
	b := startBroker(t)
	adm := b.Admin(t)
	const topic = "long-poll-kgo"
	createTopic(t, adm, topic, 1, nil)
	prod := b.Client(t, kgo.DefaultProduceTopic(topic))
	cons := b.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxWait(10*time.Second))
	ctx := testCtx(t, 60*time.Second)
	poll := func(limit time.Time) *kgo.Record {
		t.Helper()
		pctx, cancel := context.WithDeadline(ctx, limit)
		defer cancel()
		for {
			fs := cons.PollFetches(pctx)
			if pctx.Err() != nil {
				return nil
			}
			for _, e := range fs.Errors() {
				t.Fatalf("fetch: %v", e.Err)
			}
			if rs := fs.Records(); len(rs) > 0 {
				return rs[0]
			}
		}
	}
	// The first record puts the consumer in its steady loop: after it, the next
	// fetch is already parked at the log end.
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("first")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if r := poll(time.Now().Add(30 * time.Second)); r == nil || r.Offset != 0 {
		t.Fatalf("first record not consumed: %+v", r)
	}
	produced := time.Now()
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("second")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	r := poll(produced.Add(9 * time.Second))
	if r == nil {
		t.Fatal("record produced during a 10 s long poll not delivered before the max wait")
	}
	if r.Offset != 1 || string(r.Value) != "second" {
		t.Fatalf("got offset %d %q, want offset 1 \"second\"", r.Offset, r.Value)
	}
}

func metadataFor(t testing.TB, rc *rawConn, version int16, autoCreate bool, topics ...string) *kmsg.MetadataResponse {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = version
	req.AllowAutoTopicCreation = autoCreate
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := rc.Request(req)
	if err != nil {
		t.Fatalf("Metadata v%d: %v", version, err)
	}
	return resp.(*kmsg.MetadataResponse)
}

// topicReady reports whether the Metadata answer shows topic with n partitions, all
// led by broker 0.
func topicReady(m *kmsg.MetadataResponse, topic string, n int) error {
	for _, tp := range m.Topics {
		if tp.Topic == nil || *tp.Topic != topic {
			continue
		}
		if err := kerr.ErrorForCode(tp.ErrorCode); err != nil {
			return err
		}
		if len(tp.Partitions) != n {
			return fmt.Errorf("%s has %d partitions, want %d", topic, len(tp.Partitions), n)
		}
		for _, p := range tp.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("%s/%d: %w", topic, p.Partition, err)
			}
			if p.Leader != 0 {
				return fmt.Errorf("%s/%d led by %d", topic, p.Partition, p.Leader)
			}
		}
		return nil
	}
	return fmt.Errorf("%s not in the metadata answer", topic)
}

func TestMetadataAutoCreation(t *testing.T) {
	b := startBroker(t, "--override", "num.partitions=3")
	rc := dialRaw(t, b.Addr())

	// v4+ with allow_auto_topic_creation=false: unknown, and not created.
	m := metadataFor(t, rc, 9, false, "not-wanted")
	if err := topicReady(m, "not-wanted", 3); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("metadata v9 without auto-creation: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
	if m := metadataFor(t, rc, 9, false); topicReady(m, "not-wanted", 3) == nil {
		t.Fatal("topic created although the client did not allow it")
	}

	// v9 allowing it, and v0-v3 (which always ask for it) create the topic with
	// num.partitions partitions.
	for _, c := range []struct {
		version int16
		topic   string
	}{{9, "auto-v9"}, {1, "auto-v1"}} {
		eventually(t, 30*time.Second, func() error {
			return topicReady(metadataFor(t, rc, c.version, true, c.topic), c.topic, 3)
		})
		for p := range 3 {
			if _, err := os.Stat(filepath.Join(b.Dir(), fmt.Sprintf("%s-%d", c.topic, p))); err != nil {
				t.Errorf("auto-created partition dir: %v", err)
			}
		}
	}

	// A kgo producer that allows auto-creation can write to a new topic directly.
	prod := b.Client(t, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("auto-kgo"))
	if err := prod.ProduceSync(testCtx(t, 30*time.Second), &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("producing to an auto-created topic: %v", err)
	}
	td, err := b.Admin(t).ListTopics(testCtx(t, 10*time.Second), "auto-kgo")
	if err != nil {
		t.Fatal(err)
	}
	if d := td["auto-kgo"]; d.Err != nil || len(d.Partitions) != 3 {
		t.Fatalf("auto-kgo: %v, %d partitions, want 3", d.Err, len(d.Partitions))
	}
}

func TestMetadataAutoCreationDisabled(t *testing.T) {
	b := startBroker(t, "--override", "auto.create.topics.enable=false")
	rc := dialRaw(t, b.Addr())
	m := metadataFor(t, rc, 9, true, "never")
	if err := topicReady(m, "never", 1); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("metadata with auto.create.topics.enable=false: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
	if _, err := os.Stat(filepath.Join(b.Dir(), "never-0")); !os.IsNotExist(err) {
		t.Fatalf("partition dir of a topic that must not exist: %v", err)
	}
}

// TestMetadataTopicSelection: a null topic list asks for every topic (v1+), an empty
// one for none, except in v0 where empty means all; brokers are listed either way.
func TestMetadataTopicSelection(t *testing.T) {
	b := startBroker(t)
	adm := b.Admin(t)
	createTopic(t, adm, "sel-a", 1, nil)
	createTopic(t, adm, "sel-b", 2, nil)
	rc := dialRaw(t, b.Addr())
	ask := func(version int16, topics []kmsg.MetadataRequestTopic) *kmsg.MetadataResponse {
		t.Helper()
		req := kmsg.NewPtrMetadataRequest()
		req.Version = version
		req.Topics = topics
		resp, err := rc.Request(req)
		if err != nil {
			t.Fatalf("Metadata v%d: %v", version, err)
		}
		return resp.(*kmsg.MetadataResponse)
	}
	names := func(m *kmsg.MetadataResponse) map[string]bool {
		out := map[string]bool{}
		for _, tp := range m.Topics {
			if tp.Topic != nil {
				out[*tp.Topic] = true
			}
		}
		return out
	}
	for _, v := range []int16{1, 4, 9, 11} {
		all := ask(v, nil)
		if n := names(all); !n["sel-a"] || !n["sel-b"] {
			t.Errorf("v%d with a null topic list: %v, want every topic", v, n)
		}
		if len(all.Brokers) != 1 {
			t.Errorf("v%d: %d brokers", v, len(all.Brokers))
		}
		none := ask(v, []kmsg.MetadataRequestTopic{})
		if len(none.Topics) != 0 || len(none.Brokers) != 1 {
			t.Errorf("v%d with an empty topic list: %d topics and %d brokers, want none and 1", v, len(none.Topics), len(none.Brokers))
		}
	}
	if n := names(ask(0, []kmsg.MetadataRequestTopic{})); !n["sel-a"] || !n["sel-b"] {
		t.Errorf("v0 with an empty topic list: %v, want every topic", n)
	}
}
