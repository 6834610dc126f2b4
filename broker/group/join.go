package group

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type clientKey struct{}

type clientInfo struct{ id, host string }

// WithClient returns ctx carrying the client id (from the request header) and
// the client's host, which JoinGroup records for the member and DescribeGroups shows.
func WithClient(ctx context.Context, clientID, host string) context.Context {
	return context.WithValue(ctx, clientKey{}, clientInfo{id: clientID, host: host})
}

func clientFrom(ctx context.Context) clientInfo {
	ci, _ := ctx.Value(clientKey{}).(clientInfo)
	return ci
}

// newMemberID is Kafka's form: the client id, a dash and a random UUID.
func newMemberID(clientID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return clientID + "-" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

type joinResult struct {
	code         int16
	memberID     string
	generation   int32
	protocolType *string
	protocol     *string
	leader       string
	members      []kmsg.JoinGroupResponseMember
}

func joinError(memberID string, code int16) joinResult {
	return joinResult{code: code, memberID: memberID, generation: -1}
}

func (w *joinWaiter) answer(r joinResult) {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = w.version
	resp.ErrorCode = r.code
	resp.Generation = r.generation
	resp.ProtocolType = r.protocolType
	resp.Protocol = r.protocol
	resp.LeaderID = r.leader
	resp.MemberID = r.memberID
	resp.Members = r.members
	w.respond(resp)
}

type syncResult struct {
	code         int16
	protocolType *string
	protocol     *string
	assignment   []byte
}

func (w *syncWaiter) answer(r syncResult) {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = w.version
	resp.ErrorCode = r.code
	resp.ProtocolType = r.protocolType
	resp.Protocol = r.protocol
	resp.MemberAssignment = nonNil(r.assignment)
	w.respond(resp)
}

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// answerJoin sends a member's parked JoinGroup its result, if it has one parked.
func (s *shard) answerJoin(out *outbox, g *group, m *member, r joinResult) {
	w := m.join
	if w == nil {
		return
	}
	m.join = nil
	g.awaitingJoin--
	out.add(func() { w.answer(r) })
}

func (s *shard) answerSync(out *outbox, m *member, r syncResult) {
	w := m.sync
	if w == nil {
		return
	}
	m.sync = nil
	out.add(func() { w.answer(r) })
}

// generationResult is what a member is told about the current generation.
func (g *group) generationResult(m *member) joinResult {
	r := joinResult{
		memberID:     m.id,
		generation:   g.generation,
		protocolType: strp(g.protocolType),
		protocol:     strp(g.protocol),
		leader:       g.leader,
	}
	if m.id == g.leader {
		r.members = []kmsg.JoinGroupResponseMember{}
		for _, x := range g.sortedMembers() {
			jm := kmsg.NewJoinGroupResponseMember()
			jm.MemberID = x.id
			jm.InstanceID = x.instanceID
			jm.ProtocolMetadata = nonNil(x.metadataFor(g.protocol))
			r.members = append(r.members, jm)
		}
	}
	return r
}

// JoinGroup handles a JoinGroup request; the answer comes when the rebalance
// completes (or at once for errors and for members that need not wait).
func (c *Coordinator) JoinGroup(ctx context.Context, req *kmsg.JoinGroupRequest, respond func(*kmsg.JoinGroupResponse)) {
	w := &joinWaiter{version: req.GetVersion(), respond: respond}
	if req.Group == "" {
		w.answer(joinError(req.MemberID, kerr.InvalidGroupID.Code))
		return
	}
	ci := clientFrom(ctx)
	s := c.shardFor(req.Group)
	s.run(func(out *outbox) {
		if code := s.servable(); code != 0 {
			out.add(func() { w.answer(joinError(req.MemberID, code)) })
			return
		}
		fail := func(code int16) { out.add(func() { w.answer(joinError(req.MemberID, code)) }) }
		session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
		if session < c.cfg.MinSessionTimeout || session > c.cfg.MaxSessionTimeout {
			fail(kerr.InvalidSessionTimeout.Code)
			return
		}
		rebalance := time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
		if req.GetVersion() == 0 || rebalance <= 0 {
			rebalance = session
		}
		protos := make([]protocol, 0, len(req.Protocols))
		for _, p := range req.Protocols {
			protos = append(protos, protocol{name: p.Name, metadata: nonNil(p.Metadata)})
		}
		m := &member{
			id: req.MemberID, instanceID: req.InstanceID, clientID: ci.id, clientHost: ci.host,
			rebalanceTimeout: rebalance, sessionTimeout: session,
			protocolType: req.ProtocolType, protocols: protos,
		}
		g := s.groups[req.Group]
		if req.MemberID == "" {
			if g == nil {
				g = newGroup(req.Group, s.now())
				s.groups[g.id] = g
			}
		} else if g == nil {
			fail(kerr.UnknownMemberID.Code)
			return
		}
		if !s.acceptJoining(g, req.MemberID) {
			fail(kerr.GroupMaxSizeReached.Code)
			return
		}
		if req.MemberID == "" {
			s.joinUnknown(out, g, m, w, req.GetVersion() >= 4 && req.InstanceID == nil)
		} else {
			s.joinKnown(out, g, m, w)
		}
		s.maybeCompleteJoin(out, g)
	})
}

// acceptJoining applies group.max.size as Kafka does: members already in the
// group may always rejoin.
func (s *shard) acceptJoining(g *group, memberID string) bool {
	limit := s.c.cfg.MaxGroupSize
	if limit <= 0 {
		return true
	}
	_, isMember := g.members[memberID]
	switch g.state {
	case stateEmpty, stateDead:
		return true
	case statePreparingRebalance:
		return (isMember && g.members[memberID].join != nil) || g.awaitingJoin < limit
	default:
		return isMember || len(g.members) < limit
	}
}

func (s *shard) joinUnknown(out *outbox, g *group, m *member, w *joinWaiter, requireKnownID bool) {
	if g.state == stateDead {
		out.add(func() { w.answer(joinError("", kerr.CoordinatorNotAvailable.Code)) })
		return
	}
	if !g.supports(m.protocolType, m.protocols) {
		out.add(func() { w.answer(joinError("", kerr.InconsistentGroupProtocol.Code)) })
		return
	}
	m.id = newMemberID(m.clientID)
	switch {
	case m.instanceID != nil:
		if old, ok := g.static[*m.instanceID]; ok {
			s.replaceStatic(out, g, old, m, w)
			return
		}
		s.addMemberAndRebalance(out, g, m, w)
	case requireKnownID:
		// KIP-394: hand out the id and wait for the member to come back with it.
		id := m.id
		term := s.term
		g.pending[id] = time.AfterFunc(m.sessionTimeout, func() {
			s.run(func(out *outbox) {
				if !s.owns(term, g) {
					return
				}
				if _, ok := g.pending[id]; !ok {
					return
				}
				delete(g.pending, id)
				s.maybeCompleteJoin(out, g)
			})
		})
		out.add(func() { w.answer(joinError(id, kerr.MemberIDRequired.Code)) })
	default:
		s.addMemberAndRebalance(out, g, m, w)
	}
}

func (s *shard) joinKnown(out *outbox, g *group, req *member, w *joinWaiter) {
	fail := func(code int16) { out.add(func() { w.answer(joinError(req.id, code)) }) }
	if g.state == stateDead {
		fail(kerr.CoordinatorNotAvailable.Code)
		return
	}
	if !g.supports(req.protocolType, req.protocols) {
		fail(kerr.InconsistentGroupProtocol.Code)
		return
	}
	if _, ok := g.pending[req.id]; ok {
		if req.instanceID != nil {
			fail(kerr.UnknownMemberID.Code)
			return
		}
		s.addMemberAndRebalance(out, g, req, w)
		return
	}
	if g.staticFenced(req.id, req.instanceID) {
		fail(kerr.FencedInstanceID.Code)
		return
	}
	m, ok := g.members[req.id]
	if !ok || (req.instanceID != nil && g.static[*req.instanceID] != req.id) {
		fail(kerr.UnknownMemberID.Code)
		return
	}
	switch g.state {
	case statePreparingRebalance:
		s.updateMemberAndRebalance(out, g, m, req, w)
	case stateCompletingRebalance:
		if m.matches(req.protocols) {
			// A retry of a join whose answer was lost: answer with the generation.
			r := g.generationResult(m)
			out.add(func() { w.answer(r) })
			return
		}
		s.updateMemberAndRebalance(out, g, m, req, w)
	case stateStable:
		if m.id == g.leader || !m.matches(req.protocols) {
			s.updateMemberAndRebalance(out, g, m, req, w)
			return
		}
		r := g.generationResult(m)
		r.members = nil
		out.add(func() { w.answer(r) })
	default:
		fail(kerr.UnknownMemberID.Code)
	}
}

// setJoin parks w as m's join. A join already parked was given up by the
// client; it is answered so its connection's later responses are not held back.
func (s *shard) setJoin(out *outbox, g *group, m *member, w *joinWaiter) {
	s.answerJoin(out, g, m, joinError(m.id, kerr.RebalanceInProgress.Code))
	g.awaitingJoin++
	m.join = w
}

func (s *shard) updateMemberAndRebalance(out *outbox, g *group, m, req *member, w *joinWaiter) {
	m.protocols = req.protocols
	m.rebalanceTimeout, m.sessionTimeout = req.rebalanceTimeout, req.sessionTimeout
	if req.clientID != "" || req.clientHost != "" {
		m.clientID, m.clientHost = req.clientID, req.clientHost
	}
	s.setJoin(out, g, m, w)
	s.maybePrepareRebalance(out, g)
}

func (s *shard) addMemberAndRebalance(out *outbox, g *group, m *member, w *joinWaiter) {
	m.isNew = true
	if g.state == statePreparingRebalance && g.generation == 0 {
		g.newMemberAdded = true
	}
	g.add(m, w)
	s.scheduleHeartbeat(g, m, newMemberJoinTimeout)
	s.maybePrepareRebalance(out, g)
}

// replaceStatic gives a static member's instance id to a new member id (a
// restarted static member): the old id is fenced, and the group rebalances only
// if it must (KIP-345).
func (s *shard) replaceStatic(out *outbox, g *group, oldID string, req *member, w *joinWaiter) {
	m := g.members[oldID]
	oldLeader := g.leader
	s.answerJoin(out, g, m, joinError(oldID, kerr.FencedInstanceID.Code))
	s.answerSync(out, m, syncResult{code: kerr.FencedInstanceID.Code})
	delete(g.members, oldID)
	m.id = req.id
	g.members[m.id] = m
	if g.leader == oldID {
		g.leader = m.id
	}
	g.static[*req.instanceID] = m.id
	s.scheduleHeartbeat(g, m, m.sessionTimeout)

	oldProtocols := m.protocols
	oldClient, oldHost := m.clientID, m.clientHost
	m.protocols = req.protocols
	m.rebalanceTimeout, m.sessionTimeout = req.rebalanceTimeout, req.sessionTimeout
	m.clientID, m.clientHost = req.clientID, req.clientHost
	s.setJoin(out, g, m, w)

	switch g.state {
	case stateStable:
		if g.selectProtocol() != g.protocol {
			s.prepareRebalance(out, g)
			return
		}
		assignment := map[string][]byte{}
		for _, x := range g.members {
			assignment[x.id] = x.assignment
		}
		gen := g.generation
		s.appendRecords(out, []record{{groupKey(g.id), g.metadataValue(assignment)}}, func(out *outbox, current bool, err error) {
			if !current || s.groups[g.id] != g || g.members[m.id] != m {
				return
			}
			if err != nil {
				// The new id is not durable: give the instance back to the old id.
				code := storeErrorCode(err)
				s.answerJoin(out, g, m, joinResult{code: code, generation: g.generation,
					protocolType: strp(g.protocolType), protocol: strp(g.protocol), leader: oldLeader})
				delete(g.members, m.id)
				m.id = oldID
				m.protocols, m.clientID, m.clientHost = oldProtocols, oldClient, oldHost
				g.members[oldID] = m
				if g.leader == req.id {
					g.leader = oldID
				}
				g.static[*req.instanceID] = oldID
				s.scheduleHeartbeat(g, m, m.sessionTimeout)
				return
			}
			// The old leader id is returned so that the leader does not assign
			// again in a stable group, whose next sync would not be sent out.
			s.answerJoin(out, g, m, joinResult{memberID: m.id, generation: gen,
				protocolType: strp(g.protocolType), protocol: strp(g.protocol), leader: oldLeader})
		})
	case stateCompletingRebalance:
		// The leader may be assigning to the old id: rebalance again.
		s.prepareRebalance(out, g)
	}
}

func (s *shard) maybePrepareRebalance(out *outbox, g *group) {
	switch g.state {
	case stateStable, stateCompletingRebalance, stateEmpty:
		s.prepareRebalance(out, g)
	}
}

func (s *shard) prepareRebalance(out *outbox, g *group) {
	if g.state == stateCompletingRebalance {
		s.resetAssignments(out, g, kerr.RebalanceInProgress.Code)
	}
	s.stopJoinTimer(g)
	wasEmpty := g.state == stateEmpty
	g.transition(statePreparingRebalance, s.now())
	delay := s.c.cfg.InitialRebalanceDelay
	if wasEmpty && delay > 0 {
		g.initialDelay = true
		g.newMemberAdded = false
		g.initialLeft = max(g.rebalanceTimeout()-delay, 0)
		s.startJoinTimer(g, delay)
		return
	}
	g.initialDelay = false
	s.startJoinTimer(g, g.rebalanceTimeout())
	s.maybeCompleteJoin(out, g)
}

// resetAssignments fails the parked syncs and forgets the assignments.
func (s *shard) resetAssignments(out *outbox, g *group, code int16) {
	for _, m := range g.members {
		m.assignment = nil
		s.answerSync(out, m, syncResult{code: code})
	}
}

func (s *shard) stopJoinTimer(g *group) {
	if g.joinTimer != nil {
		g.joinTimer.Stop()
		g.joinTimer = nil
	}
	g.joinSeq++
}

func (s *shard) startJoinTimer(g *group, d time.Duration) {
	g.joinSeq++
	seq, term := g.joinSeq, s.term
	g.joinTimer = time.AfterFunc(d, func() {
		s.run(func(out *outbox) {
			if !s.owns(term, g) || g.joinSeq != seq || g.state != statePreparingRebalance {
				return
			}
			g.joinTimer = nil
			if g.initialDelay && g.newMemberAdded && g.initialLeft > 0 {
				// Members keep arriving: wait again, within the rebalance timeout.
				g.newMemberAdded = false
				d := min(s.c.cfg.InitialRebalanceDelay, g.initialLeft)
				g.initialLeft -= d
				s.startJoinTimer(g, d)
				return
			}
			s.completeJoin(out, g)
		})
	})
}

// maybeCompleteJoin completes the join phase early once every member rejoined
// (not during a new group's initial delay, which always runs to its end).
func (s *shard) maybeCompleteJoin(out *outbox, g *group) {
	if g.state == statePreparingRebalance && !g.initialDelay && g.allJoined() {
		s.stopJoinTimer(g)
		s.completeJoin(out, g)
	}
}

func (s *shard) completeJoin(out *outbox, g *group) {
	for _, m := range g.sortedMembers() {
		if m.join == nil && m.instanceID == nil {
			// Dynamic members that did not rejoin in time are out; static ones
			// keep their place until their session expires.
			s.answerSync(out, m, syncResult{code: kerr.UnknownMemberID.Code})
			g.remove(m.id)
		}
	}
	if limit := s.c.cfg.MaxGroupSize; limit > 0 && len(g.members) > limit {
		// Over a lowered group.max.size: the newest members other than the leader go.
		extra := len(g.members) - limit
		ms := g.sortedMembers()
		for i := len(ms) - 1; i >= 0 && extra > 0; i-- {
			if ms[i].id == g.leader {
				continue
			}
			s.answerJoin(out, g, ms[i], joinError(ms[i].id, kerr.GroupMaxSizeReached.Code))
			g.remove(ms[i].id)
			extra--
		}
	}
	if len(g.members) > 0 && !s.electJoinedLeader(g) {
		// Nobody rejoined: wait another rebalance timeout for session expiry to clear them.
		g.initialDelay = false
		s.startJoinTimer(g, g.rebalanceTimeout())
		return
	}
	g.generation++
	g.initialDelay = false
	now := s.now()
	if len(g.members) == 0 {
		g.protocol = ""
		g.transition(stateEmpty, now)
		g.computeSubscribed()
		s.appendRecords(out, []record{{groupKey(g.id), g.metadataValue(nil)}}, func(_ *outbox, _ bool, err error) {
			if err != nil {
				s.c.logger.Warn("group coordinator: storing empty group failed", "group", g.id, "error", err)
			}
		})
		return
	}
	g.protocol = g.selectProtocol()
	g.transition(stateCompletingRebalance, now)
	g.computeSubscribed()
	for _, m := range g.sortedMembers() {
		s.answerJoin(out, g, m, g.generationResult(m))
		s.scheduleHeartbeat(g, m, m.sessionTimeout)
		m.isNew = false
	}
}

// electJoinedLeader keeps the leader if it rejoined, else makes some member
// that rejoined the leader; false if none did.
func (s *shard) electJoinedLeader(g *group) bool {
	if l, ok := g.members[g.leader]; ok && l.join != nil {
		return true
	}
	for _, m := range g.sortedMembers() {
		if m.join != nil {
			g.leader = m.id
			return true
		}
	}
	return false
}

// removeFromGroup takes a member out (left, expired or did not rejoin) and
// moves the group on.
func (s *shard) removeFromGroup(out *outbox, g *group, m *member) {
	s.answerJoin(out, g, m, joinError(m.id, kerr.UnknownMemberID.Code))
	s.answerSync(out, m, syncResult{code: kerr.UnknownMemberID.Code})
	g.remove(m.id)
	switch g.state {
	case stateStable, stateCompletingRebalance:
		s.maybePrepareRebalance(out, g)
	case statePreparingRebalance:
		s.maybeCompleteJoin(out, g)
	}
}

// scheduleHeartbeat restarts m's expiry clock at d from now.
func (s *shard) scheduleHeartbeat(g *group, m *member, d time.Duration) {
	if m.hb != nil {
		m.hb.Stop()
	}
	m.hbSeq++
	seq, term := m.hbSeq, s.term
	m.hb = time.AfterFunc(d, func() {
		s.run(func(out *outbox) {
			if !s.owns(term, g) || g.members[m.id] != m || m.hbSeq != seq {
				return
			}
			if !m.isNew && (m.join != nil || m.sync != nil) {
				// Waiting in a rebalance counts as alive; its end restarts the clock.
				return
			}
			s.c.logger.Info("group coordinator: member expired", "group", g.id, "member", m.id)
			s.removeFromGroup(out, g, m)
		})
	})
}

// SyncGroup handles a SyncGroup request: the leader's carries the assignment,
// which is stored and then sent to every member.
func (c *Coordinator) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest, respond func(*kmsg.SyncGroupResponse)) {
	w := &syncWaiter{version: req.GetVersion(), respond: respond}
	if req.Group == "" {
		w.answer(syncResult{code: kerr.InvalidGroupID.Code})
		return
	}
	s := c.shardFor(req.Group)
	s.run(func(out *outbox) {
		fail := func(code int16) { out.add(func() { w.answer(syncResult{code: code}) }) }
		if code := s.servable(); code != 0 {
			if code == kerr.CoordinatorLoadInProgress.Code {
				// The rebalance state is lost with the load: start over at JoinGroup.
				code = kerr.RebalanceInProgress.Code
			}
			fail(code)
			return
		}
		g := s.groups[req.Group]
		if g == nil {
			fail(kerr.UnknownMemberID.Code)
			return
		}
		switch {
		case g.state == stateDead:
			fail(kerr.CoordinatorNotAvailable.Code)
			return
		case g.staticFenced(req.MemberID, req.InstanceID):
			fail(kerr.FencedInstanceID.Code)
			return
		case g.members[req.MemberID] == nil:
			fail(kerr.UnknownMemberID.Code)
			return
		case req.Generation != g.generation:
			fail(kerr.IllegalGeneration.Code)
			return
		case req.ProtocolType != nil && *req.ProtocolType != g.protocolType,
			req.Protocol != nil && *req.Protocol != g.protocol:
			fail(kerr.InconsistentGroupProtocol.Code)
			return
		}
		m := g.members[req.MemberID]
		switch g.state {
		case stateEmpty:
			fail(kerr.UnknownMemberID.Code)
		case statePreparingRebalance:
			fail(kerr.RebalanceInProgress.Code)
		case stateStable:
			s.scheduleHeartbeat(g, m, m.sessionTimeout)
			r := syncResult{protocolType: strp(g.protocolType), protocol: strp(g.protocol), assignment: m.assignment}
			out.add(func() { w.answer(r) })
		case stateCompletingRebalance:
			if m.sync != nil {
				s.answerSync(out, m, syncResult{code: kerr.RebalanceInProgress.Code})
			}
			m.sync = w
			s.scheduleHeartbeat(g, m, m.sessionTimeout)
			if m.id == g.leader {
				s.storeAssignment(out, g, req.GroupAssignment)
			}
		}
	})
}

func (s *shard) storeAssignment(out *outbox, g *group, given []kmsg.SyncGroupRequestGroupAssignment) {
	assignment := make(map[string][]byte, len(g.members))
	for _, a := range given {
		if _, ok := g.members[a.MemberID]; ok {
			assignment[a.MemberID] = a.MemberAssignment
		}
	}
	for id := range g.members {
		if _, ok := assignment[id]; !ok {
			assignment[id] = []byte{}
		}
	}
	gen := g.generation
	s.appendRecords(out, []record{{groupKey(g.id), g.metadataValue(assignment)}}, func(out *outbox, current bool, err error) {
		if !current || s.groups[g.id] != g || g.state != stateCompletingRebalance || g.generation != gen {
			return
		}
		if err != nil {
			s.resetAssignments(out, g, storeErrorCode(err))
			s.maybePrepareRebalance(out, g)
			return
		}
		for _, m := range g.members {
			m.assignment = assignment[m.id]
			s.answerSync(out, m, syncResult{protocolType: strp(g.protocolType), protocol: strp(g.protocol), assignment: m.assignment})
			s.scheduleHeartbeat(g, m, m.sessionTimeout)
		}
		g.transition(stateStable, s.now())
	})
}

// Heartbeat handles a Heartbeat request.
func (c *Coordinator) Heartbeat(ctx context.Context, req *kmsg.HeartbeatRequest, respond func(*kmsg.HeartbeatResponse)) {
	answer := func(code int16) {
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = code
		respond(resp)
	}
	if req.Group == "" {
		answer(kerr.InvalidGroupID.Code)
		return
	}
	s := c.shardFor(req.Group)
	var code int16
	s.run(func(*outbox) { code = s.heartbeat(req) })
	answer(code)
}

func (s *shard) heartbeat(req *kmsg.HeartbeatRequest) int16 {
	if code := s.servable(); code != 0 {
		if code == kerr.CoordinatorLoadInProgress.Code {
			// The member keeps its place; it learns of any rebalance once loaded.
			return 0
		}
		return code
	}
	g := s.groups[req.Group]
	switch {
	case g == nil:
		return kerr.UnknownMemberID.Code
	case g.state == stateDead:
		return kerr.CoordinatorNotAvailable.Code
	case g.staticFenced(req.MemberID, req.InstanceID):
		return kerr.FencedInstanceID.Code
	case g.members[req.MemberID] == nil:
		return kerr.UnknownMemberID.Code
	case req.Generation != g.generation:
		return kerr.IllegalGeneration.Code
	}
	m := g.members[req.MemberID]
	switch g.state {
	case stateEmpty:
		return kerr.UnknownMemberID.Code
	case statePreparingRebalance:
		s.scheduleHeartbeat(g, m, m.sessionTimeout)
		return kerr.RebalanceInProgress.Code
	default:
		s.scheduleHeartbeat(g, m, m.sessionTimeout)
		return 0
	}
}

// LeaveGroup handles a LeaveGroup request (one member before v3, a batch after).
func (c *Coordinator) LeaveGroup(ctx context.Context, req *kmsg.LeaveGroupRequest, respond func(*kmsg.LeaveGroupResponse)) {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	leaving := req.Members
	if req.GetVersion() < 3 {
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = req.MemberID
		leaving = []kmsg.LeaveGroupRequestMember{lm}
	}
	finish := func(top int16, codes []int16) {
		resp.ErrorCode = top
		for i, code := range codes {
			rm := kmsg.NewLeaveGroupResponseMember()
			rm.MemberID, rm.InstanceID = leaving[i].MemberID, leaving[i].InstanceID
			rm.ErrorCode = code
			resp.Members = append(resp.Members, rm)
		}
		if req.GetVersion() < 3 {
			resp.Members = nil
			if top == 0 && len(codes) > 0 {
				resp.ErrorCode = codes[0]
			}
		}
		respond(resp)
	}
	if req.Group == "" {
		finish(kerr.InvalidGroupID.Code, nil)
		return
	}
	s := c.shardFor(req.Group)
	var top int16
	var codes []int16
	s.run(func(out *outbox) { top, codes = s.leave(out, req.Group, leaving) })
	finish(top, codes)
}

func (s *shard) leave(out *outbox, id string, leaving []kmsg.LeaveGroupRequestMember) (int16, []int16) {
	if code := s.servable(); code != 0 {
		return code, nil
	}
	codes := make([]int16, len(leaving))
	g := s.groups[id]
	if g == nil {
		for i := range codes {
			codes[i] = kerr.UnknownMemberID.Code
		}
		return 0, codes
	}
	if g.state == stateDead {
		return kerr.CoordinatorNotAvailable.Code, nil
	}
	for i, lm := range leaving {
		memberID := lm.MemberID
		if memberID == "" && lm.InstanceID != nil {
			memberID = g.static[*lm.InstanceID]
		}
		if t, ok := g.pending[memberID]; ok && lm.InstanceID == nil {
			t.Stop()
			delete(g.pending, memberID)
			s.maybeCompleteJoin(out, g)
			continue
		}
		if g.staticFenced(memberID, lm.InstanceID) {
			codes[i] = kerr.FencedInstanceID.Code
			continue
		}
		m := g.members[memberID]
		if m == nil {
			codes[i] = kerr.UnknownMemberID.Code
			continue
		}
		s.removeFromGroup(out, g, m)
	}
	return 0, codes
}
