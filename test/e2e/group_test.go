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

// groupConsume polls a group member until it has n records, failing on errors.
func groupConsume(t testing.TB, cl *kgo.Client, n int) []*kgo.Record {
	t.Helper()
	ctx := testCtx(t, 90*time.Second)
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("group consumer: %d of %d records before the deadline", len(out), n)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("group consumer: %s/%d: %v", e.Topic, e.Partition, e.Err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

func committed(t testing.TB, adm *kadm.Client, group, topic string, parts int32) map[int32]int64 {
	t.Helper()
	resp, err := adm.FetchOffsets(testCtx(t, 30*time.Second), group)
	if err != nil {
		t.Fatalf("OffsetFetch %s: %v", group, err)
	}
	out := map[int32]int64{}
	for p := range parts {
		o, ok := resp.Lookup(topic, p)
		if !ok || o.Err != nil {
			t.Fatalf("OffsetFetch %s %s/%d: %v %v", group, topic, p, ok, o.Err)
		}
		out[p] = o.At
	}
	return out
}

// TestConsumerGroupCommitsSurviveKill: a kgo group consumer reads everything and
// commits; the committed offsets survive SIGKILL of the broker, and the next member
// of the group resumes exactly after them; two members split the partitions.
func TestConsumerGroupCommitsSurviveKill(t *testing.T) {
	b := startBroker(t, "--override", "group.initial.rebalance.delay.ms=0", "--override", "offsets.topic.num.partitions=3")
	adm := b.Admin(t)
	const topic, group, parts = "grp", "g1", 3
	createTopic(t, adm, topic, parts, nil)
	prod := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := testCtx(t, 3*time.Minute)
	produce := func(from, to int) {
		t.Helper()
		var rs []*kgo.Record
		for i := from; i < to; i++ {
			rs = append(rs, &kgo.Record{Partition: int32(i % parts), Value: []byte(strconv.Itoa(i))})
		}
		if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	member := func() *kgo.Client {
		return b.Client(t, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
			kgo.FetchMaxWait(500*time.Millisecond), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	}
	produce(0, 300)
	a := member()
	if got := groupConsume(t, a, 300); len(got) != 300 {
		t.Fatalf("first member read %d records, want 300", len(got))
	}
	if err := a.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	a.Close()
	want := map[int32]int64{0: 100, 1: 100, 2: 100}
	if got := committed(t, adm, group, topic, parts); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("committed %v, want %v", got, want)
	}

	b.Kill(t)
	b.Restart(t)
	if got := committed(t, adm, group, topic, parts); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("committed after SIGKILL and restart %v, want %v", got, want)
	}
	produce(300, 330)
	c := member()
	got := groupConsume(t, c, 30)
	seen := map[string]bool{}
	for _, r := range got {
		if n, _ := strconv.Atoi(string(r.Value)); n < 300 {
			t.Fatalf("resumed member re-read %q at %d/%d: committed offsets ignored", r.Value, r.Partition, r.Offset)
		}
		seen[string(r.Value)] = true
	}
	if len(got) != 30 || len(seen) != 30 {
		t.Fatalf("resumed member read %d records (%d distinct), want 30", len(got), len(seen))
	}

	// A second member joins: the partitions are split between the two.
	d := member()
	eventually(t, 60*time.Second, func() error {
		c.PollFetches(testCtx(t, 200*time.Millisecond))
		d.PollFetches(testCtx(t, 200*time.Millisecond))
		dg, err := adm.DescribeGroups(testCtx(t, 10*time.Second), group)
		if err != nil {
			return err
		}
		g := dg[group]
		if g.State != "Stable" || len(g.Members) != 2 {
			return fmt.Errorf("group %s with %d members", g.State, len(g.Members))
		}
		owned := map[int32]int{}
		for _, m := range g.Members {
			ca, ok := m.Assigned.AsConsumer()
			if !ok {
				return fmt.Errorf("member %s has no consumer assignment", m.MemberID)
			}
			for _, tp := range ca.Topics {
				for _, p := range tp.Partitions {
					owned[p]++
				}
			}
		}
		if len(owned) != parts {
			return fmt.Errorf("assigned partitions %v, want all %d once", owned, parts)
		}
		for p, n := range owned {
			if n != 1 {
				return fmt.Errorf("partition %d assigned %d times", p, n)
			}
		}
		return nil
	})
}

// TestStandaloneOffsetCommits: tools and groupless consumers commit offsets for a
// group with no members (generation -1); the offsets are kept across a SIGKILL,
// and a commit for a partition that does not exist is refused.
func TestStandaloneOffsetCommits(t *testing.T) {
	b := startBroker(t, "--override", "offsets.topic.num.partitions=3")
	adm := b.Admin(t)
	const topic, group = "standalone", "tooling"
	createTopic(t, adm, topic, 2, nil)
	ctx := testCtx(t, time.Minute)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 5, LeaderEpoch: -1, Metadata: "m0"})
	offs.Add(kadm.Offset{Topic: topic, Partition: 1, At: 9, LeaderEpoch: -1})
	resp, err := adm.CommitOffsets(ctx, group, offs)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	if err := resp.Error(); err != nil {
		t.Fatalf("commit: %v", err)
	}
	check := func(when string) {
		t.Helper()
		got, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			t.Fatalf("fetch %s: %v", when, err)
		}
		for p, want := range map[int32]int64{0: 5, 1: 9} {
			o, ok := got.Lookup(topic, p)
			if !ok || o.Err != nil || o.At != want {
				t.Errorf("%s: %s/%d committed %+v, want %d", when, topic, p, o, want)
			}
		}
		if o, _ := got.Lookup(topic, 0); o.Metadata != "m0" {
			t.Errorf("%s: metadata %q, want m0", when, o.Metadata)
		}
	}
	check("after commit")
	b.Kill(t)
	b.Restart(t)
	check("after SIGKILL and restart")

	bad := kadm.Offsets{}
	bad.Add(kadm.Offset{Topic: topic, Partition: 7, At: 1, LeaderEpoch: -1})
	resp, err = adm.CommitOffsets(ctx, group, bad)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := resp.Lookup(topic, 7); !ok || !errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("commit for partition 7 of a 2-partition topic: %+v, want UNKNOWN_TOPIC_OR_PARTITION", o)
	}
}
