package group

// Transactional offset commits (TxnOffsetCommit, KIP-98; KIP-447 require_stable).
//
// A producer inside a transaction commits a group's offsets with
// TxnOffsetCommit: they are written to __consumer_offsets as a transactional
// batch of the producer, and held pending for that producer, invisible to
// OffsetFetch, until the transaction coordinator's marker reaches this
// partition: COMMIT makes them the group's committed offsets, ABORT drops
// them. OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT for a
// partition with a pending commit. Loading a partition replays the same:
// transactional records wait for their producer's marker in the log.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/batch"
)

// txnProducer is the producer a transactional batch is written for.
type txnProducer struct {
	id    int64
	epoch int16
}

// pendingOffset is a transactional offset commit waiting for its marker; at is
// the offset of its record in __consumer_offsets.
type pendingOffset struct {
	e  offsetEntry
	at int64
}

// errBadMarker is a control batch in __consumer_offsets that fails its CRC.
var errBadMarker = errors.New("control batch with a bad CRC")

// txnCompletion is a marker the coordinator learnt of while loading.
type txnCompletion struct {
	pid    int64
	commit bool
	marker int64
}

// buildTxnBatch encodes recs as one uncompressed transactional batch of p.
func buildTxnBatch(recs []record, now time.Time, p txnProducer) []byte {
	var body []byte
	for i, r := range recs {
		body = batch.AppendRecord(body, 0, int32(i), r.key, r.value, nil)
	}
	ms := now.UnixMilli()
	return batch.Encode(batch.Header{
		PartitionLeaderEpoch: -1,
		Attributes:           batch.AttrTransactional,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       ms,
		MaxTimestamp:         ms,
		ProducerID:           p.id,
		ProducerEpoch:        p.epoch,
		BaseSequence:         0,
		NumRecords:           int32(len(recs)),
	}, body)
}

// TxnOffsetCommit handles a TxnOffsetCommit request (v0-v3). The caller has
// authorized it. A group that does not exist is created (as Kafka does); a
// request naming a member or generation (v3) is checked against the group
// like an OffsetCommit. The answer comes once the batch is in the log with
// acks=all; the offsets stay pending until the transaction's marker.
func (c *Coordinator) TxnOffsetCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest, respond func(*kmsg.TxnOffsetCommitResponse)) {
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Version = 8 // no per-partition timestamp, no retention
	oc.Group, oc.Generation, oc.MemberID, oc.InstanceID = req.Group, req.Generation, req.MemberID, req.InstanceID
	for _, t := range req.Topics {
		ot := kmsg.NewOffsetCommitRequestTopic()
		ot.Topic = t.Topic
		for _, p := range t.Partitions {
			op := kmsg.NewOffsetCommitRequestTopicPartition()
			op.Partition, op.Offset, op.LeaderEpoch, op.Metadata = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata
			ot.Partitions = append(ot.Partitions, op)
		}
		oc.Topics = append(oc.Topics, ot)
	}
	answer := func(r *kmsg.OffsetCommitResponse) {
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.TxnOffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: p.ErrorCode})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		respond(resp)
	}
	if req.ProducerID < 0 || req.ProducerEpoch < 0 {
		r := oc.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, t := range oc.Topics {
			rt := kmsg.OffsetCommitResponseTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: kerr.InvalidProducerEpoch.Code})
			}
			r.Topics = append(r.Topics, rt)
		}
		answer(r)
		return
	}
	c.commitOffsets(oc, &txnProducer{id: req.ProducerID, epoch: req.ProducerEpoch}, answer)
}

func (g *group) addPending(pid int64, tp topicPartition, po pendingOffset) {
	if g.pendingTxn == nil {
		g.pendingTxn = make(map[int64]map[topicPartition]pendingOffset)
	}
	m := g.pendingTxn[pid]
	if m == nil {
		m = make(map[topicPartition]pendingOffset)
		g.pendingTxn[pid] = m
	}
	m[tp] = po
}

// hasPending reports whether some producer's commit of tp awaits its marker.
func (g *group) hasPending(tp topicPartition) bool {
	for _, m := range g.pendingTxn {
		if _, ok := m[tp]; ok {
			return true
		}
	}
	return false
}

// completeTxn applies producer pid's marker at offset marker to the group:
// its pending commits written before the marker become committed offsets
// (COMMIT) or are dropped (ABORT). It reports whether any stay pending.
func (g *group) completeTxn(pid int64, commit bool, marker int64) bool {
	m := g.pendingTxn[pid]
	for tp, po := range m {
		if po.at >= marker {
			continue
		}
		if commit {
			g.offsets[tp] = po.e
		}
		delete(m, tp)
	}
	if len(m) == 0 {
		delete(g.pendingTxn, pid)
		return false
	}
	return true
}

func (s *shard) noteTxnGroup(pid int64, id string) {
	if s.txnGroups == nil {
		s.txnGroups = make(map[int64]map[string]bool)
	}
	if s.txnGroups[pid] == nil {
		s.txnGroups[pid] = make(map[string]bool)
	}
	s.txnGroups[pid][id] = true
}

// completeTxnLocked applies a marker to every group with pending commits of
// the producer; the shard lock is held.
func (s *shard) completeTxnLocked(pid int64, commit bool, marker int64) {
	for id := range s.txnGroups[pid] {
		g := s.groups[id]
		if g == nil || !g.completeTxn(pid, commit, marker) {
			delete(s.txnGroups[pid], id)
		}
	}
	if len(s.txnGroups[pid]) == 0 {
		delete(s.txnGroups, pid)
	}
}

// CompleteTxn tells the coordinator that the COMMIT (commit) or ABORT marker
// of producer pid is in __consumer_offsets partition p at offset marker and
// replicated: the producer's pending offset commits there written before it
// are applied or dropped. A partition still loading applies it once loaded.
func (c *Coordinator) CompleteTxn(partition int32, pid int64, commit bool, marker int64) {
	if partition < 0 || int(partition) >= len(c.shards) {
		return
	}
	s := c.shards[partition]
	s.run(func(*outbox) {
		switch s.status {
		case shardActive:
			s.completeTxnLocked(pid, commit, marker)
		case shardLoading:
			s.lateTxn = append(s.lateTxn, txnCompletion{pid: pid, commit: commit, marker: marker})
		}
	})
}

// PendingTxnOffsets is the number of groups of partition p holding pending
// transactional offset commits of producer pid (for tests and metrics).
func (c *Coordinator) PendingTxnOffsets(partition int32, pid int64) int {
	if partition < 0 || int(partition) >= len(c.shards) {
		return 0
	}
	s := c.shards[partition]
	n := 0
	s.run(func(*outbox) { n = len(s.txnGroups[pid]) })
	return n
}

// applyTxnBatch replays a transactional batch (records pending for its
// producer) or a marker (completing them) while loading.
func (st *loadState) applyTxnBatch(ctx context.Context, codecs batch.Codecs, b []byte) error {
	h, err := batch.ParseHeader(b)
	if err != nil {
		return err
	}
	if h.Control() {
		if int64(len(b)) < h.Size() || !batch.CRCValid(b[:h.Size()]) {
			return errBadMarker
		}
		m, err := batch.MarkerOf(b[:h.Size()])
		if err != nil {
			return err
		}
		st.complete(h.ProducerID, m.Type == batch.ControlCommit, h.BaseOffset)
		return nil
	}
	return readBatch(ctx, codecs, b, func(offset int64, key, value []byte) error {
		r, err := parseRecord(key, value)
		if err != nil || !r.isOffset || r.offset == nil {
			// Transactions carry offset commits only; anything else is applied as is.
			return st.apply(offset, key, value)
		}
		if st.pending[h.ProducerID] == nil {
			st.pending[h.ProducerID] = make(map[string]map[topicPartition]pendingOffset)
		}
		m := st.pending[h.ProducerID][r.group]
		if m == nil {
			m = make(map[topicPartition]pendingOffset)
			st.pending[h.ProducerID][r.group] = m
		}
		m[r.tp] = pendingOffset{e: *r.offset, at: offset}
		return nil
	})
}

func (st *loadState) complete(pid int64, commit bool, _ int64) {
	for id, m := range st.pending[pid] {
		if !commit {
			continue
		}
		offs := st.offsets[id]
		if offs == nil {
			offs = map[topicPartition]offsetEntry{}
			st.offsets[id] = offs
		}
		for tp, po := range m {
			offs[tp] = po.e
		}
	}
	delete(st.pending, pid)
}

// installPending puts the commits still waiting for a marker after a load into
// their groups, then applies the markers learnt of during the load.
func (s *shard) installPending(st *loadState, late []txnCompletion) {
	for pid, byGroup := range st.pending {
		for id, m := range byGroup {
			g := s.groups[id]
			if g == nil {
				g = newGroup(id, s.now())
				s.groups[id] = g
			}
			for tp, po := range m {
				g.addPending(pid, tp, po)
			}
			s.noteTxnGroup(pid, id)
		}
	}
	for _, c := range late {
		s.completeTxnLocked(c.pid, c.commit, c.marker)
	}
}
