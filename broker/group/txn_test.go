package group

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/batch"
)

func txnCommitReq(group string, pid int64, epoch int16, offs map[string]map[int32]int64) *kmsg.TxnOffsetCommitRequest {
	r := kmsg.NewPtrTxnOffsetCommitRequest()
	r.Version = 3
	r.TransactionalID, r.Group = "tx", group
	r.ProducerID, r.ProducerEpoch = pid, epoch
	r.Generation = -1
	for topic, ps := range offs {
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = topic
		for p, o := range ps {
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, o
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	return r
}

func (e *env) txnCommit(group string, pid int64, epoch int16, offs map[string]map[int32]int64) {
	e.t.Helper()
	resp := await(e.t, call(e.c.TxnOffsetCommit, txnCommitReq(group, pid, epoch, offs)))
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			wantCode(e.t, "txn offset commit", p.ErrorCode, nil)
		}
	}
}

// fetchStable fetches one partition's offset with require_stable.
func (e *env) fetchStable(group, topic string, partition int32) (int64, int16) {
	e.t.Helper()
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 7
	r.Group = group
	r.RequireStable = true
	r.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{partition}}}
	resp := await(e.t, call(e.c.OffsetFetch, r))
	p := resp.Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode
}

// marker appends producer pid's marker to the group's partition, as the
// partition leader would, and reports it to the coordinator.
func (e *env) marker(group string, pid int64, commit bool) {
	e.t.Helper()
	m := batch.Marker{Type: batch.ControlAbort}
	if commit {
		m.Type = batch.ControlCommit
	}
	p := e.c.PartitionFor(group)
	off, err := e.log.Append(context.Background(), p, batch.EncodeMarker(pid, 0, m, e.clk.now().UnixMilli()))
	if err != nil {
		e.t.Fatal(err)
	}
	e.c.CompleteTxn(p, pid, commit, off)
}

func TestTxnOffsetCommitVisibleOnCommitOnly(t *testing.T) {
	e := newEnv(t, nil)
	e.commit("g", "", -1, map[string]map[int32]int64{"a": {0: 5}})
	e.txnCommit("g", 7, 0, map[string]map[int32]int64{"a": {0: 10, 1: 11}})
	if _, offs := e.fetchAll("g"); offs[topicPartition{"a", 0}] != 5 || len(offs) != 1 {
		t.Fatalf("offsets before the marker %v", offs)
	}
	if _, code := e.fetchStable("g", "a", 0); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("require_stable with a pending commit: %v", kerr.ErrorForCode(code))
	}
	if e.c.PendingTxnOffsets(e.c.PartitionFor("g"), 7) != 1 {
		t.Fatal("pending commits not tracked")
	}
	e.marker("g", 7, true)
	if _, offs := e.fetchAll("g"); offs[topicPartition{"a", 0}] != 10 || offs[topicPartition{"a", 1}] != 11 {
		t.Fatalf("offsets after COMMIT %v", offs)
	}
	if off, code := e.fetchStable("g", "a", 0); code != 0 || off != 10 {
		t.Fatalf("require_stable after COMMIT: %d, %v", off, kerr.ErrorForCode(code))
	}

	e.txnCommit("g", 7, 0, map[string]map[int32]int64{"a": {0: 20}})
	e.marker("g", 7, false)
	if _, offs := e.fetchAll("g"); offs[topicPartition{"a", 0}] != 10 {
		t.Fatalf("offsets after ABORT %v", offs)
	}
	if e.c.PendingTxnOffsets(e.c.PartitionFor("g"), 7) != 0 {
		t.Fatal("pending commits left after the marker")
	}
}

func TestTxnOffsetCommitMarkerBeforeCommitIgnored(t *testing.T) {
	e := newEnv(t, nil)
	p := e.c.PartitionFor("g")
	e.txnCommit("g", 8, 0, map[string]map[int32]int64{"a": {0: 3}})
	// A marker reported with an offset before the commit's record (a late
	// report of an earlier transaction) does not complete it.
	e.c.CompleteTxn(p, 8, true, 0)
	if _, code := e.fetchStable("g", "a", 0); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("an earlier marker completed a later commit: %v", kerr.ErrorForCode(code))
	}
}

func TestTxnOffsetCommitReload(t *testing.T) {
	e := newEnv(t, nil)
	p := e.c.PartitionFor("g")
	e.txnCommit("g", 1, 0, map[string]map[int32]int64{"a": {0: 10}})
	e.marker("g", 1, true)
	e.txnCommit("g", 2, 0, map[string]map[int32]int64{"a": {1: 21}})
	e.marker("g", 2, false)
	e.txnCommit("g", 3, 0, map[string]map[int32]int64{"a": {2: 32}})

	e.c.Resign(p)
	e.c.BecomeLeader(p, 2)
	e.waitLoaded()
	_, offs := e.fetchAll("g")
	if len(offs) != 1 || offs[topicPartition{"a", 0}] != 10 {
		t.Fatalf("reloaded offsets %v: want only the committed transaction's", offs)
	}
	if _, code := e.fetchStable("g", "a", 2); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("open transaction's commit after reload: %v", kerr.ErrorForCode(code))
	}
	e.marker("g", 3, true)
	if _, offs := e.fetchAll("g"); offs[topicPartition{"a", 2}] != 32 {
		t.Fatalf("commit after reload %v", offs)
	}
}

func TestTxnOffsetCommitChecksMember(t *testing.T) {
	e := newEnv(t, nil)
	r := txnCommitReq("g", 1, 0, map[string]map[int32]int64{"a": {0: 1}})
	r.MemberID, r.Generation = "nobody", 3
	resp := await(t, call(e.c.TxnOffsetCommit, r))
	wantCode(t, "unknown member", resp.Topics[0].Partitions[0].ErrorCode, kerr.UnknownMemberID)
	r = txnCommitReq("g", -1, 0, map[string]map[int32]int64{"a": {0: 1}})
	resp = await(t, call(e.c.TxnOffsetCommit, r))
	wantCode(t, "no producer", resp.Topics[0].Partitions[0].ErrorCode, kerr.InvalidProducerEpoch)
}
