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
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	setAll := func(code int16) {
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				resp.Topics[i].Partitions[j].ErrorCode = code
			}
		}
	}
	send := func() { respond(resp) }
	if req.ProducerID < 0 || req.ProducerEpoch < 0 {
		setAll(kerr.InvalidProducerEpoch.Code)
		send()
		return
	}
	s := c.shardFor(req.Group)
	s.run(func(out *outbox) {
		if code := s.servable(); code != 0 {
			setAll(code)
			out.add(send)
			return
		}
		g := s.groups[req.Group]
		if g == nil {
			g = newGroup(req.Group, s.now())
			s.groups[g.id] = g
		}
		var code int16
		switch {
		case g.state == stateDead:
			code = kerr.CoordinatorNotAvailable.Code
		case req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil:
			switch {
			case g.staticFenced(req.MemberID, req.InstanceID):
				code = kerr.FencedInstanceID.Code
			case g.members[req.MemberID] == nil:
				code = kerr.UnknownMemberID.Code
			case req.Generation != g.generation:
				code = kerr.IllegalGeneration.Code
			}
		}
		if code != 0 {
			setAll(code)
			out.add(send)
			return
		}
		s.storeTxnOffsets(out, g, req, resp, send)
	})
}

func (s *shard) storeTxnOffsets(out *outbox, g *group, req *kmsg.TxnOffsetCommitRequest, resp *kmsg.TxnOffsetCommitResponse, send func()) {
	now := s.now().UnixMilli()
	type pos struct{ t, p int }
	var recs []record
	var entries []offsetEntry
	var tps []topicPartition
	var where []pos
	for ti, t := range req.Topics {
		for pi, p := range t.Partitions {
			md := ""
			if p.Metadata != nil {
				md = *p.Metadata
			}
			if len(md) > s.c.cfg.MaxMetadataSize {
				resp.Topics[ti].Partitions[pi].ErrorCode = kerr.OffsetMetadataTooLarge.Code
				continue
			}
			e := offsetEntry{offset: p.Offset, leaderEpoch: p.LeaderEpoch, metadata: md, commitAt: now, expireAt: -1}
			tp := topicPartition{t.Topic, p.Partition}
			recs = append(recs, record{offsetKey(g.id, tp), offsetValue(e)})
			entries = append(entries, e)
			tps = append(tps, tp)
			where = append(where, pos{ti, pi})
		}
	}
	if len(recs) == 0 {
		out.add(send)
		return
	}
	if s.w == nil {
		for _, w := range where {
			resp.Topics[w.t].Partitions[w.p].ErrorCode = kerr.NotCoordinator.Code
		}
		out.add(send)
		return
	}
	term := s.term
	p := txnProducer{id: req.ProducerID, epoch: req.ProducerEpoch}
	s.w.submit(&writeReq{recs: recs, producer: &p, done: func(base int64, err error) {
		s.run(func(out *outbox) {
			if err != nil {
				code := commitErrorCode(err)
				for _, w := range where {
					resp.Topics[w.t].Partitions[w.p].ErrorCode = code
				}
			} else if s.term == term && s.groups[g.id] == g {
				for i, tp := range tps {
					g.addPending(p.id, tp, pendingOffset{e: entries[i], at: base + int64(i)})
				}
				s.noteTxnGroup(p.id, g.id)
			}
			out.add(send)
		})
	}})
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
