package e2e

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// endOffsetForEpoch asks OffsetForLeaderEpoch v3 for the end of epoch on partition 0.
func endOffsetForEpoch(t testing.TB, rc *rawConn, topic string, current, epoch int32) kmsg.OffsetForLeaderEpochResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version = 3
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.CurrentLeaderEpoch = current
	rp.LeaderEpoch = epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := rc.Request(req)
	if err != nil {
		t.Fatal(err)
	}
	r := resp.(*kmsg.OffsetForLeaderEpochResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		t.Fatalf("OffsetForLeaderEpoch: %d topics in the answer", len(r.Topics))
	}
	return r.Topics[0].Partitions[0]
}

func leaderEpoch(t testing.TB, rc *rawConn, topic string) int32 {
	t.Helper()
	m := metadataFor(t, rc, 9, false, topic)
	if len(m.Topics) != 1 || len(m.Topics[0].Partitions) != 1 {
		t.Fatalf("metadata for %s: %+v", topic, m.Topics)
	}
	return m.Topics[0].Partitions[0].LeaderEpoch
}

// TestLeaderEpochsAcrossRestart: consumers detect log truncation with
// OffsetForLeaderEpoch (KIP-320); the epochs the broker reports must match its log,
// before and after a restart, and a client ahead of the leader is told so.
func TestLeaderEpochsAcrossRestart(t *testing.T) {
	b := startBroker(t)
	adm := b.Admin(t)
	const topic = "epochs"
	createTopic(t, adm, topic, 1, nil)
	prod := b.Client(t, kgo.DefaultProduceTopic(topic))
	ctx := testCtx(t, time.Minute)
	produce := func(n int) {
		t.Helper()
		var rs []*kgo.Record
		for range n {
			rs = append(rs, &kgo.Record{Value: []byte("x")})
		}
		if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(10)
	rc := dialRaw(t, b.Addr())
	e0 := leaderEpoch(t, rc, topic)
	if p := endOffsetForEpoch(t, rc, topic, e0, e0); p.ErrorCode != 0 || p.LeaderEpoch != e0 || p.EndOffset != 10 {
		t.Fatalf("epoch %d: %v, epoch %d, end %d; want epoch %d ending at 10", e0, kerr.ErrorForCode(p.ErrorCode), p.LeaderEpoch, p.EndOffset, e0)
	}
	if p := endOffsetForEpoch(t, rc, topic, e0+1, e0); p.ErrorCode != kerr.UnknownLeaderEpoch.Code {
		t.Errorf("current epoch ahead of the leader: %v, want UNKNOWN_LEADER_EPOCH", kerr.ErrorForCode(p.ErrorCode))
	}

	// Fetch and ListOffsets check the client's view of the leader epoch too.
	req := fetchRequest(topic, 0, 0)
	req.Topics[0].Partitions[0].CurrentLeaderEpoch = e0 + 1
	resp, err := rc.Request(req)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownLeaderEpoch.Code {
		t.Errorf("fetch with a current epoch ahead of the leader: %v, want UNKNOWN_LEADER_EPOCH", kerr.ErrorForCode(code))
	}
	lo := listOffsetsRequest(topic, -1)
	lo.Topics[0].Partitions[0].CurrentLeaderEpoch = e0 + 1
	resp, err = rc.Request(lo)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownLeaderEpoch.Code {
		t.Errorf("ListOffsets with a current epoch ahead of the leader: %v, want UNKNOWN_LEADER_EPOCH", kerr.ErrorForCode(code))
	}

	b.Stop(t)
	b.Restart(t)
	rc = dialRaw(t, b.Addr())
	// A single broker that comes back is still the leader; Kafka's controller
	// keeps its epoch then (no election), a new epoch is fine too.
	e1 := leaderEpoch(t, rc, topic)
	if e1 < e0 {
		t.Fatalf("leader epoch %d after a restart, was %d", e1, e0)
	}
	produce(5)
	oldEnd := int64(10)
	if e1 == e0 {
		oldEnd = 15
	}
	if p := endOffsetForEpoch(t, rc, topic, e1, e0); p.ErrorCode != 0 || p.LeaderEpoch != e0 || p.EndOffset != oldEnd {
		t.Errorf("epoch %d: %v, epoch %d, end %d; want it to end at %d", e0, kerr.ErrorForCode(p.ErrorCode), p.LeaderEpoch, p.EndOffset, oldEnd)
	}
	if p := endOffsetForEpoch(t, rc, topic, e1, e1); p.ErrorCode != 0 || p.LeaderEpoch != e1 || p.EndOffset != 15 {
		t.Errorf("current epoch %d: %v, epoch %d, end %d; want the log end 15", e1, kerr.ErrorForCode(p.ErrorCode), p.LeaderEpoch, p.EndOffset)
	}
	if e1 > e0 {
		if p := endOffsetForEpoch(t, rc, topic, e0, e0); p.ErrorCode != kerr.FencedLeaderEpoch.Code {
			t.Errorf("a client with the old current epoch: %v, want FENCED_LEADER_EPOCH", kerr.ErrorForCode(p.ErrorCode))
		}
	}
	// A consumer that had read up to offset 10 resumes without a truncation error.
	got := consumeRange(t, b, topic, 0, 10, 5)
	if got[0].LeaderEpoch != e1 {
		t.Errorf("records after the restart carry leader epoch %d, want %d", got[0].LeaderEpoch, e1)
	}
}
