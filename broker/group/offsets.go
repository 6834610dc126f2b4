package group

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit handles an OffsetCommit request. Members commit with their
// generation; a group with no members also takes commits with generation -1 and
// no member id (tools and consumers that assign partitions themselves). The
// answer comes once the offsets are in the log with acks=all.
func (c *Coordinator) OffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest, respond func(*kmsg.OffsetCommitResponse)) {
	c.commitOffsets(req, nil, respond)
}

// commitOffsets serves OffsetCommit and, with producer set, TxnOffsetCommit:
// the group is then created if need be, and the offsets are written as the
// producer's transactional batch and held pending until its marker (txn.go).
func (c *Coordinator) commitOffsets(req *kmsg.OffsetCommitRequest, producer *txnProducer, respond func(*kmsg.OffsetCommitResponse)) {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
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
	s := c.shardFor(req.Group)
	s.run(func(out *outbox) {
		if code := s.servable(); code != 0 {
			setAll(code)
			out.add(send)
			return
		}
		g := s.groups[req.Group]
		if g == nil {
			if req.Generation >= 0 && producer == nil {
				setAll(kerr.IllegalGeneration.Code)
				out.add(send)
				return
			}
			g = newGroup(req.Group, s.now())
			s.groups[g.id] = g
		}
		if code := s.validateCommit(g, req, producer != nil); code != 0 {
			setAll(code)
			out.add(send)
			return
		}
		if producer != nil {
			s.storeOffsets(out, g, req, resp, producer, send)
			return
		}
		switch g.state {
		case stateCompletingRebalance:
			setAll(kerr.RebalanceInProgress.Code)
			out.add(send)
			return
		case stateStable, statePreparingRebalance:
			m := g.members[req.MemberID]
			s.scheduleHeartbeat(g, m, m.sessionTimeout)
		}
		s.storeOffsets(out, g, req, resp, nil, send)
	})
}

// validateCommit checks a commit against the group; a transactional one
// (Kafka's rule) needs no member when it names none.
func (s *shard) validateCommit(g *group, req *kmsg.OffsetCommitRequest, transactional bool) int16 {
	switch {
	case g.state == stateDead:
		return kerr.CoordinatorNotAvailable.Code
	case req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil:
		switch {
		case g.staticFenced(req.MemberID, req.InstanceID):
			return kerr.FencedInstanceID.Code
		case g.members[req.MemberID] == nil:
			return kerr.UnknownMemberID.Code
		case req.Generation != g.generation:
			return kerr.IllegalGeneration.Code
		}
	case g.state != stateEmpty && !transactional:
		// Only members commit to a group that has members.
		return kerr.UnknownMemberID.Code
	}
	return 0
}

func (s *shard) storeOffsets(out *outbox, g *group, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, producer *txnProducer, send func()) {
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
			if req.GetVersion() == 1 && p.Timestamp != -1 {
				e.commitAt = p.Timestamp
			}
			if req.GetVersion() >= 2 && req.GetVersion() <= 4 && req.RetentionTimeMillis != -1 {
				e.expireAt = now + req.RetentionTimeMillis
			}
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
	s.appendRecordsFor(out, recs, producer, func(out *outbox, current bool, base int64, err error) {
		switch {
		case err != nil:
			code := commitErrorCode(err)
			for _, w := range where {
				resp.Topics[w.t].Partitions[w.p].ErrorCode = code
			}
		case !current || s.groups[g.id] != g:
		case producer != nil:
			for i, tp := range tps {
				g.addPending(producer.id, tp, pendingOffset{e: entries[i], at: base + int64(i)})
			}
			s.noteTxnGroup(producer.id, g.id)
		default:
			for i, tp := range tps {
				g.offsets[tp] = entries[i]
			}
		}
		out.add(send)
	})
}

// OffsetFetch handles an OffsetFetch request: the group's committed offsets,
// -1 for partitions without one; all of them when no topics are named (v2+).
// v8 asks for several groups at once.
func (c *Coordinator) OffsetFetch(ctx context.Context, req *kmsg.OffsetFetchRequest, respond func(*kmsg.OffsetFetchResponse)) {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.GetVersion() >= 8 {
		for _, rg := range req.Groups {
			var topics []kmsg.OffsetFetchRequestTopic
			if rg.Topics != nil {
				topics = []kmsg.OffsetFetchRequestTopic{}
				for _, t := range rg.Topics {
					topics = append(topics, kmsg.OffsetFetchRequestTopic{Topic: t.Topic, Partitions: t.Partitions})
				}
			}
			code, res := c.fetchOffsets(rg.Group, topics, req.RequireStable)
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group, g.ErrorCode = rg.Group, code
			for _, t := range res {
				gt := kmsg.NewOffsetFetchResponseGroupTopic()
				gt.Topic = t.Topic
				for _, p := range t.Partitions {
					gt.Partitions = append(gt.Partitions, kmsg.OffsetFetchResponseGroupTopicPartition{
						Partition: p.Partition, Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: p.Metadata, ErrorCode: p.ErrorCode,
					})
				}
				g.Topics = append(g.Topics, gt)
			}
			resp.Groups = append(resp.Groups, g)
		}
		respond(resp)
		return
	}
	topics := req.Topics
	if req.GetVersion() < 2 && topics == nil {
		topics = []kmsg.OffsetFetchRequestTopic{}
	}
	code, res := c.fetchOffsets(req.Group, topics, req.RequireStable)
	resp.Topics = res
	if req.GetVersion() >= 2 {
		resp.ErrorCode = code
	} else if code != 0 {
		// Before v2 there is no top-level error: each partition carries it.
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				resp.Topics[i].Partitions[j].ErrorCode = code
			}
		}
	}
	respond(resp)
}

func noOffset(partition int32) kmsg.OffsetFetchResponseTopicPartition {
	p := kmsg.NewOffsetFetchResponseTopicPartition()
	p.Partition, p.Offset, p.LeaderEpoch = partition, -1, -1
	empty := ""
	p.Metadata = &empty
	return p
}

// fetchOffsets answers for one group; topics nil means every committed offset.
// On error the requested partitions are listed with offset -1. With
// requireStable (KIP-447) a partition with a pending transactional commit is
// UNSTABLE_OFFSET_COMMIT, which the consumer retries.
func (c *Coordinator) fetchOffsets(id string, topics []kmsg.OffsetFetchRequestTopic, requireStable bool) (int16, []kmsg.OffsetFetchResponseTopic) {
	var out []kmsg.OffsetFetchResponseTopic
	var g *group
	unstable := func(tp topicPartition) bool { return requireStable && g != nil && g.hasPending(tp) }
	requested := func(lookup func(tp topicPartition) (offsetEntry, bool)) {
		for _, t := range topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := noOffset(p)
				if unstable(topicPartition{t.Topic, p}) {
					rp.ErrorCode = kerr.UnstableOffsetCommit.Code
				} else if e, ok := lookup(topicPartition{t.Topic, p}); ok {
					rp.Offset, rp.LeaderEpoch = e.offset, e.leaderEpoch
					md := e.metadata
					rp.Metadata = &md
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			out = append(out, rt)
		}
	}
	none := func(topicPartition) (offsetEntry, bool) { return offsetEntry{}, false }
	s := c.shardFor(id)
	var code int16
	s.run(func(*outbox) {
		if code = s.servable(); code != 0 {
			requested(none)
			return
		}
		g = s.groups[id]
		if g == nil {
			requested(none)
			return
		}
		if topics != nil {
			requested(func(tp topicPartition) (offsetEntry, bool) {
				e, ok := g.offsets[tp]
				return e, ok
			})
			return
		}
		tps := make([]topicPartition, 0, len(g.offsets))
		for tp := range g.offsets {
			tps = append(tps, tp)
		}
		sort.Slice(tps, func(i, j int) bool {
			if tps[i].topic != tps[j].topic {
				return tps[i].topic < tps[j].topic
			}
			return tps[i].partition < tps[j].partition
		})
		for _, tp := range tps {
			if n := len(out); n == 0 || out[n-1].Topic != tp.topic {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = tp.topic
				out = append(out, rt)
			}
			e := g.offsets[tp]
			rp := noOffset(tp.partition)
			if unstable(tp) {
				rp.ErrorCode = kerr.UnstableOffsetCommit.Code
			} else {
				rp.Offset, rp.LeaderEpoch = e.offset, e.leaderEpoch
				md := e.metadata
				rp.Metadata = &md
			}
			out[len(out)-1].Partitions = append(out[len(out)-1].Partitions, rp)
		}
	})
	if out == nil {
		out = []kmsg.OffsetFetchResponseTopic{}
	}
	return code, out
}

// OffsetDelete handles an OffsetDelete request (KIP-496): offsets of an empty
// group, or of topics a consumer group does not subscribe to, are deleted.
func (c *Coordinator) OffsetDelete(ctx context.Context, req *kmsg.OffsetDeleteRequest, respond func(*kmsg.OffsetDeleteResponse)) {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	send := func() { respond(resp) }
	s := c.shardFor(req.Group)
	s.run(func(out *outbox) {
		if code := s.servable(); code != 0 {
			resp.ErrorCode = code
			out.add(send)
			return
		}
		g := s.groups[req.Group]
		if g == nil || g.state == stateDead {
			resp.ErrorCode = kerr.GroupIDNotFound.Code
			out.add(send)
			return
		}
		if g.state != stateEmpty && g.protocolType != consumerProtocolType {
			resp.ErrorCode = kerr.NonEmptyGroup.Code
			out.add(send)
			return
		}
		var recs []record
		var gone []topicPartition
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetDeleteResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetDeleteResponseTopicPartition()
				rp.Partition = p.Partition
				tp := topicPartition{t.Topic, p.Partition}
				switch {
				case g.state != stateEmpty && g.subscribedTo(t.Topic):
					rp.ErrorCode = kerr.GroupSubscribedToTopic.Code
				default:
					if _, ok := g.offsets[tp]; ok {
						delete(g.offsets, tp)
						gone = append(gone, tp)
						recs = append(recs, record{key: offsetKey(g.id, tp)})
					}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		if len(recs) == 0 {
			out.add(send)
			return
		}
		s.appendRecords(out, recs, func(out *outbox, _ bool, err error) {
			if err != nil {
				s.c.logger.Warn("group coordinator: writing offset tombstones failed", "group", g.id, "offsets", len(gone), "error", err)
			}
			out.add(send)
		})
	})
}

// expireOffsets drops offsets older than the retention (Kafka 2.8 rules) and
// empty groups left with no offsets, writing tombstones for both.
func (c *Coordinator) expireOffsets() {
	for _, s := range c.shards {
		s.run(func(out *outbox) {
			if s.status != shardActive {
				return
			}
			s.expire(out)
		})
	}
}

func (s *shard) expire(out *outbox) {
	now := s.now().UnixMilli()
	retention := s.c.cfg.OffsetsRetention.Milliseconds()
	var recs []record
	for _, g := range s.groups {
		for _, tp := range g.expiredOffsets(now, retention) {
			delete(g.offsets, tp)
			recs = append(recs, record{key: offsetKey(g.id, tp)})
		}
		if g.state == stateEmpty && len(g.offsets) == 0 && len(g.pending) == 0 {
			g.transition(stateDead, s.now())
			delete(s.groups, g.id)
			recs = append(recs, record{key: groupKey(g.id)})
		}
	}
	if len(recs) == 0 {
		return
	}
	s.appendRecords(out, recs, func(_ *outbox, _ bool, err error) {
		if err != nil {
			s.c.logger.Warn("group coordinator: writing expiry tombstones failed", "partition", s.id, "records", len(recs), "error", err)
		}
	})
}

// expiredOffsets lists what has outlived the retention: for an empty group with
// a protocol, counted from when it became empty; for a consumer group with
// members, offsets of topics no member subscribes to, counted from the commit;
// for a group that only stores offsets, counted from the commit. A commit that
// asked for its own expiry (v2-v4 retention time) expires then.
func (g *group) expiredOffsets(now, retention int64) []topicPartition {
	var base func(e offsetEntry) int64
	skip := func(string) bool { return false }
	switch {
	case g.protocolType != "" && g.state == stateEmpty:
		base = func(e offsetEntry) int64 {
			if g.stateAt >= 0 {
				return g.stateAt
			}
			return e.commitAt
		}
	case g.protocolType == consumerProtocolType && g.subscribed != nil:
		base = func(e offsetEntry) int64 { return e.commitAt }
		skip = func(topic string) bool { return g.subscribed[topic] }
	case g.protocolType == "":
		base = func(e offsetEntry) int64 { return e.commitAt }
	default:
		return nil
	}
	var out []topicPartition
	for tp, e := range g.offsets {
		if skip(tp.topic) {
			continue
		}
		if e.expireAt >= 0 && now >= e.expireAt || e.expireAt < 0 && now-base(e) >= retention {
			out = append(out, tp)
		}
	}
	return out
}

// TopicsDeleted removes, in every group this broker coordinates, the committed
// offsets of topics that were deleted, with tombstones so the removal survives a
// coordinator move; an empty group left with no offsets becomes Dead. As Kafka's
// onPartitionsDeleted: a topic created again under the same name must not resume
// at the old topic's offsets.
func (c *Coordinator) TopicsDeleted(topics []string) {
	if len(topics) == 0 {
		return
	}
	gone := make(map[string]bool, len(topics))
	for _, t := range topics {
		gone[t] = true
	}
	for _, s := range c.shards {
		s.run(func(out *outbox) {
			if s.status != shardActive {
				return
			}
			var recs []record
			for _, g := range s.groups {
				for tp := range g.offsets {
					if gone[tp.topic] {
						delete(g.offsets, tp)
						recs = append(recs, record{key: offsetKey(g.id, tp)})
					}
				}
				if len(recs) > 0 && g.state == stateEmpty && len(g.offsets) == 0 && len(g.pending) == 0 {
					g.transition(stateDead, s.now())
					delete(s.groups, g.id)
					recs = append(recs, record{key: groupKey(g.id)})
				}
			}
			if len(recs) == 0 {
				return
			}
			s.appendRecords(out, recs, func(_ *outbox, _ bool, err error) {
				if err != nil {
					s.c.logger.Warn("group coordinator: writing tombstones of deleted topics failed", "partition", s.id, "records", len(recs), "error", err)
				}
			})
		})
	}
}
