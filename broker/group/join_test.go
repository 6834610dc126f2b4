package group

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rejoinAll drives every member through a rebalance: each joins (the last join
// completes it), then all sync with the leader's assignment.
func (e *env) rejoinAll(group string, ms []*tmember, o joinOpts) {
	e.t.Helper()
	chans := make([]<-chan *kmsg.JoinGroupResponse, len(ms))
	for i, m := range ms {
		oo := o
		oo.memberID, oo.instance = m.id, m.instance
		chans[i] = e.join(group, oo)
	}
	for i, m := range ms {
		jr := await(e.t, chans[i])
		wantCode(e.t, "rejoin", jr.ErrorCode, nil)
		e.adopt(m, jr)
	}
	syncs := make([]<-chan *kmsg.SyncGroupResponse, len(ms))
	for i, m := range ms {
		syncs[i] = e.sync(group, m.id, m.gen, m.instance, e.assignFor(m))
	}
	for i, m := range ms {
		sr := await(e.t, syncs[i])
		wantCode(e.t, "sync", sr.ErrorCode, nil)
		if want := "assigned:" + m.id; string(sr.MemberAssignment) != want {
			e.t.Fatalf("member %s assignment %q, want %q", m.id, sr.MemberAssignment, want)
		}
	}
}

// addMember joins a new member to a stable group and rebalances everyone.
func (e *env) addMember(group string, ms []*tmember, o joinOpts) []*tmember {
	e.t.Helper()
	o.memberID = ""
	jr := await(e.t, e.join(group, o))
	wantCode(e.t, "first join", jr.ErrorCode, kerr.MemberIDRequired)
	nm := &tmember{id: jr.MemberID}
	if len(ms) > 0 {
		// The newcomer's join parks; the others learn of it by heartbeat.
		oo := o
		oo.memberID = nm.id
		ch := e.join(group, oo)
		if !pending(ch) {
			e.t.Fatal("join completed while other members had not rejoined")
		}
		for _, m := range ms {
			wantCode(e.t, "heartbeat during rebalance", e.heartbeat(group, m.id, m.gen, m.instance), kerr.RebalanceInProgress)
		}
		e.rejoinAllWith(group, ms, nm, ch, o)
		return append(ms, nm)
	}
	e.joinAndSync(group, nm, o)
	return []*tmember{nm}
}

// rejoinAllWith is rejoinAll where the new member's join is already parked.
func (e *env) rejoinAllWith(group string, ms []*tmember, nm *tmember, parked <-chan *kmsg.JoinGroupResponse, o joinOpts) {
	e.t.Helper()
	chans := []<-chan *kmsg.JoinGroupResponse{parked}
	all := append([]*tmember{nm}, ms...)
	for _, m := range ms {
		oo := o
		oo.memberID, oo.instance = m.id, m.instance
		chans = append(chans, e.join(group, oo))
	}
	for i, m := range all {
		jr := await(e.t, chans[i])
		wantCode(e.t, "rejoin", jr.ErrorCode, nil)
		e.adopt(m, jr)
	}
	syncs := make([]<-chan *kmsg.SyncGroupResponse, len(all))
	for i, m := range all {
		syncs[i] = e.sync(group, m.id, m.gen, m.instance, e.assignFor(m))
	}
	for i, m := range all {
		sr := await(e.t, syncs[i])
		wantCode(e.t, "sync", sr.ErrorCode, nil)
		if want := "assigned:" + m.id; string(sr.MemberAssignment) != want {
			e.t.Fatalf("member %s assignment %q, want %q", m.id, sr.MemberAssignment, want)
		}
	}
}

func TestJoinSyncHeartbeatThreeMembers(t *testing.T) {
	e := newEnv(t, nil)
	var ms []*tmember
	for range 3 {
		ms = e.addMember("g", ms, joinOpts{})
	}
	gen := ms[0].gen
	for _, m := range ms {
		if m.gen != gen || m.leader != ms[0].leader {
			t.Fatalf("members disagree: %+v", ms)
		}
		wantCode(t, "heartbeat", e.heartbeat("g", m.id, m.gen, nil), nil)
	}
	if gen != 3 {
		t.Fatalf("generation %d after three joins, want 3", gen)
	}
	d := e.describe("g")
	if d.State != "Stable" || d.Protocol != "range" || d.ProtocolType != "consumer" || len(d.Members) != 3 {
		t.Fatalf("describe: %+v", d)
	}
	for _, dm := range d.Members {
		if string(dm.MemberAssignment) != "assigned:"+dm.MemberID || dm.ClientID != "client" || dm.ClientHost != "/127.0.0.1" {
			t.Fatalf("described member %+v", dm)
		}
		if !bytes.Equal(dm.ProtocolMetadata, subscription("t")) {
			t.Fatalf("described metadata %x", dm.ProtocolMetadata)
		}
	}
	// The leader's join response listed every member.
	var leader *tmember
	for _, m := range ms {
		if m.id == m.leader {
			leader = m
		}
	}
	if leader == nil || len(leader.members) != 3 {
		t.Fatalf("leader saw %v", leader)
	}
	// A stable member's join with unchanged metadata does not rebalance.
	for _, m := range ms {
		if m.id == m.leader {
			continue
		}
		jr := await(t, e.join("g", joinOpts{memberID: m.id}))
		wantCode(t, "rejoin stable", jr.ErrorCode, nil)
		if jr.Generation != gen || len(jr.Members) != 0 {
			t.Fatalf("stable rejoin: %+v", jr)
		}
		break
	}
	if d := e.describe("g"); d.State != "Stable" {
		t.Fatalf("state %s after a follower's identical rejoin", d.State)
	}
}

func TestProtocolSelection(t *testing.T) {
	g := newGroup("g", time.Now())
	add := func(id string, names ...string) {
		m := &member{id: id, protocolType: "consumer"}
		for _, n := range names {
			m.protocols = append(m.protocols, protocol{name: n, metadata: []byte(n)})
		}
		g.add(m, nil)
	}
	add("a", "range", "roundrobin", "sticky")
	add("b", "roundrobin", "range")
	add("c", "roundrobin", "range", "sticky")
	if got := g.selectProtocol(); got != "roundrobin" {
		t.Fatalf("selected %q, want roundrobin (two votes of three; sticky is not common)", got)
	}
	g = newGroup("g2", time.Now())
	add("a", "range", "roundrobin")
	add("b", "roundrobin", "range")
	if got := g.selectProtocol(); got != "range" {
		t.Fatalf("tie selected %q, want the leader's first choice range", got)
	}

	e := newEnv(t, nil)
	ms := e.addMember("p", nil, joinOpts{protocols: []string{"range", "roundrobin"}})
	e.addMember("p", ms, joinOpts{protocols: []string{"roundrobin"}})
	if d := e.describe("p"); d.Protocol != "roundrobin" {
		t.Fatalf("group protocol %q, want roundrobin", d.Protocol)
	}
	jr := await(t, e.join("p", joinOpts{version: 3, protocols: []string{"sticky"}}))
	wantCode(t, "join without a common protocol", jr.ErrorCode, kerr.InconsistentGroupProtocol)
	r := joinReq("p", joinOpts{version: 3})
	r.ProtocolType = "connect"
	wantCode(t, "join with another protocol type", await(t, call(e.c.JoinGroup, r)).ErrorCode, kerr.InconsistentGroupProtocol)
}

func TestMemberIDRequired(t *testing.T) {
	e := newEnv(t, nil)
	jr := await(t, e.join("g", joinOpts{version: 4}))
	wantCode(t, "v4 join without member id", jr.ErrorCode, kerr.MemberIDRequired)
	if jr.MemberID == "" || !bytes.HasPrefix([]byte(jr.MemberID), []byte("client-")) {
		t.Fatalf("member id %q", jr.MemberID)
	}
	id := jr.MemberID
	jr = await(t, e.join("g", joinOpts{version: 4, memberID: id}))
	wantCode(t, "join with the given id", jr.ErrorCode, nil)
	if jr.MemberID != id || jr.LeaderID != id || jr.Generation != 1 || len(jr.Members) != 1 {
		t.Fatalf("join: %+v", jr)
	}
	// v3 has no such step.
	jr = await(t, e.join("h", joinOpts{version: 3}))
	wantCode(t, "v3 join", jr.ErrorCode, nil)
	// A member id the group never gave out is unknown.
	jr = await(t, e.join("g", joinOpts{version: 4, memberID: "client-made-up"}))
	wantCode(t, "made-up id", jr.ErrorCode, kerr.UnknownMemberID)
}

func TestRebalanceOnLeave(t *testing.T) {
	e := newEnv(t, nil)
	var ms []*tmember
	for range 3 {
		ms = e.addMember("g", ms, joinOpts{})
	}
	gen := ms[0].gen
	r := kmsg.NewPtrLeaveGroupRequest()
	r.Version = 4
	r.Group = "g"
	r.Members = []kmsg.LeaveGroupRequestMember{{MemberID: ms[2].id}, {MemberID: "nobody"}}
	lr := await(t, call(e.c.LeaveGroup, r))
	wantCode(t, "leave", lr.ErrorCode, nil)
	wantCode(t, "leave member", lr.Members[0].ErrorCode, nil)
	wantCode(t, "leave unknown", lr.Members[1].ErrorCode, kerr.UnknownMemberID)
	for _, m := range ms[:2] {
		wantCode(t, "heartbeat after leave", e.heartbeat("g", m.id, m.gen, nil), kerr.RebalanceInProgress)
	}
	e.rejoinAll("g", ms[:2], joinOpts{})
	if ms[0].gen != gen+1 || len(e.describe("g").Members) != 2 {
		t.Fatalf("after leave: gen %d, members %v", ms[0].gen, e.describe("g").Members)
	}
	// v0 leave: the single member's error is the top-level error.
	r0 := kmsg.NewPtrLeaveGroupRequest()
	r0.Version = 0
	r0.Group, r0.MemberID = "g", "nobody"
	wantCode(t, "v0 leave unknown", await(t, call(e.c.LeaveGroup, r0)).ErrorCode, kerr.UnknownMemberID)
	r0.MemberID = ms[1].id
	wantCode(t, "v0 leave", await(t, call(e.c.LeaveGroup, r0)).ErrorCode, nil)
	// The leader is left alone: it rejoins and the group completes with it.
	e.rejoinAll("g", ms[:1], joinOpts{})
	if ms[0].leader != ms[0].id || len(ms[0].members) != 1 {
		t.Fatalf("last member: %+v", ms[0])
	}
	r0.MemberID = ms[0].id
	wantCode(t, "last leave", await(t, call(e.c.LeaveGroup, r0)).ErrorCode, nil)
	if d := e.describe("g"); d.State != "Empty" || len(d.Members) != 0 {
		t.Fatalf("after everyone left: %+v", d)
	}
}

func TestRebalanceWaitsForRebalanceTimeout(t *testing.T) {
	e := newEnv(t, nil)
	o := joinOpts{rebalance: 200 * time.Millisecond}
	ms := e.addMember("g", nil, o)
	ms = e.addMember("g", ms, o)
	// A third member joins; the second never rejoins, so the join phase ends at
	// the rebalance timeout, without it.
	ch := e.join("g", joinOpts{version: 3, rebalance: o.rebalance})
	first := e.join("g", joinOpts{memberID: ms[0].id, rebalance: o.rebalance})
	a, b := await(t, ch), await(t, first)
	wantCode(t, "newcomer", a.ErrorCode, nil)
	wantCode(t, "rejoined", b.ErrorCode, nil)
	if a.Generation != ms[0].gen+1 || len(e.describe("g").Members) != 2 {
		t.Fatalf("generation %d, members %d", a.Generation, len(e.describe("g").Members))
	}
	wantCode(t, "dropped member heartbeat", e.heartbeat("g", ms[1].id, ms[1].gen, nil), kerr.UnknownMemberID)
}

func TestSessionTimeoutRemovesMember(t *testing.T) {
	e := newEnv(t, nil)
	ms := e.addMember("g", nil, joinOpts{})
	// The second member has a short session and never heartbeats.
	ms = e.addMember("g", ms, joinOpts{session: 300 * time.Millisecond})
	waitFor(t, "expired member to trigger a rebalance", func() bool {
		return e.heartbeat("g", ms[0].id, ms[0].gen, nil) == kerr.RebalanceInProgress.Code
	})
	e.rejoinAll("g", ms[:1], joinOpts{})
	d := e.describe("g")
	if len(d.Members) != 1 || d.Members[0].MemberID != ms[0].id {
		t.Fatalf("after expiry: %+v", d.Members)
	}

	// A lone member that stops heartbeating leaves the group empty.
	e2 := newEnv(t, nil)
	jr := await(t, e2.join("solo", joinOpts{version: 3, session: 50 * time.Millisecond}))
	wantCode(t, "join", jr.ErrorCode, nil)
	wantCode(t, "sync", await(t, e2.sync("solo", jr.MemberID, jr.Generation, nil, nil)).ErrorCode, nil)
	waitFor(t, "group to become empty", func() bool {
		d := e2.describe("solo")
		return d.State == "Empty" && len(d.Members) == 0
	})
}

func TestFencingErrors(t *testing.T) {
	e := newEnv(t, nil)
	ms := e.addMember("g", nil, joinOpts{})
	m := ms[0]
	wantCode(t, "old generation", e.heartbeat("g", m.id, m.gen-1, nil), kerr.IllegalGeneration)
	wantCode(t, "unknown member", e.heartbeat("g", "nobody", m.gen, nil), kerr.UnknownMemberID)
	wantCode(t, "unknown group", e.heartbeat("nogroup", m.id, m.gen, nil), kerr.UnknownMemberID)
	wantCode(t, "sync old generation", await(t, e.sync("g", m.id, m.gen-1, nil, nil)).ErrorCode, kerr.IllegalGeneration)
	wantCode(t, "sync unknown member", await(t, e.sync("g", "nobody", m.gen, nil, nil)).ErrorCode, kerr.UnknownMemberID)

	// During a rebalance: heartbeats and syncs of the old generation say so.
	nj := await(t, e.join("g", joinOpts{version: 4}))
	parked := e.join("g", joinOpts{memberID: nj.MemberID})
	wantCode(t, "heartbeat in rebalance", e.heartbeat("g", m.id, m.gen, nil), kerr.RebalanceInProgress)
	wantCode(t, "sync in rebalance", await(t, e.sync("g", m.id, m.gen, nil, nil)).ErrorCode, kerr.RebalanceInProgress)
	cr := e.commit("g", m.id, m.gen, map[string]map[int32]int64{"t": {0: 5}})
	wantCode(t, "commit in rebalance", commitCodes(cr)[topicPartition{"t", 0}], nil)
	jr := await(t, e.join("g", joinOpts{memberID: m.id}))
	wantCode(t, "rejoin", jr.ErrorCode, nil)
	wantCode(t, "parked", await(t, parked).ErrorCode, nil)
	// Joined but not synced: commits are refused until the rebalance completes.
	cr = e.commit("g", m.id, jr.Generation, map[string]map[int32]int64{"t": {0: 6}})
	wantCode(t, "commit before sync", commitCodes(cr)[topicPartition{"t", 0}], kerr.RebalanceInProgress)
	cr = e.commit("g", m.id, jr.Generation-1, map[string]map[int32]int64{"t": {0: 6}})
	wantCode(t, "commit old generation", commitCodes(cr)[topicPartition{"t", 0}], kerr.IllegalGeneration)
	wantCode(t, "bad session timeout", await(t, e.join("g", joinOpts{version: 3, session: time.Hour})).ErrorCode, kerr.InvalidSessionTimeout)
	r := joinReq("", joinOpts{})
	wantCode(t, "empty group id", await(t, call(e.c.JoinGroup, r)).ErrorCode, kerr.InvalidGroupID)
}

func TestStaticMemberReplacedIsFenced(t *testing.T) {
	e := newEnv(t, nil)
	inst := "instance-1"
	jr := await(t, e.join("g", joinOpts{instance: &inst}))
	wantCode(t, "static join", jr.ErrorCode, nil) // static members skip MEMBER_ID_REQUIRED
	old := &tmember{instance: &inst}
	e.adopt(old, jr)
	wantCode(t, "sync", await(t, e.sync("g", old.id, old.gen, &inst, e.assignFor(old))).ErrorCode, nil)

	// The same instance restarts: a new member id, no rebalance (same protocol),
	// and the old leader id returned so that the member does not assign again.
	jr = await(t, e.join("g", joinOpts{instance: &inst}))
	wantCode(t, "static rejoin", jr.ErrorCode, nil)
	if jr.MemberID == old.id || jr.Generation != old.gen || jr.LeaderID != old.id {
		t.Fatalf("replacement: %+v (old %s)", jr, old.id)
	}
	newID := jr.MemberID
	if d := e.describe("g"); d.State != "Stable" || len(d.Members) != 1 || d.Members[0].MemberID != newID ||
		string(d.Members[0].MemberAssignment) != "assigned:"+old.id {
		t.Fatalf("after replacement: %+v", d)
	}
	wantCode(t, "old id heartbeat", e.heartbeat("g", old.id, old.gen, &inst), kerr.FencedInstanceID)
	wantCode(t, "old id sync", await(t, e.sync("g", old.id, old.gen, &inst, nil)).ErrorCode, kerr.FencedInstanceID)
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = 8
	r.Group, r.MemberID, r.Generation, r.InstanceID = "g", old.id, old.gen, &inst
	r.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}}}
	resp := await(t, call(e.c.OffsetCommit, r))
	wantCode(t, "old id commit", resp.Topics[0].Partitions[0].ErrorCode, kerr.FencedInstanceID)
	wantCode(t, "old id join", await(t, e.join("g", joinOpts{memberID: old.id, instance: &inst})).ErrorCode, kerr.FencedInstanceID)
	wantCode(t, "new id heartbeat", e.heartbeat("g", newID, old.gen, &inst), nil)
	sr := await(t, e.sync("g", newID, old.gen, &inst, nil))
	wantCode(t, "new id sync", sr.ErrorCode, nil)
	if string(sr.MemberAssignment) != "assigned:"+old.id {
		t.Fatalf("new id keeps the assignment, got %q", sr.MemberAssignment)
	}

	// Leaving by instance id alone.
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version = 4
	lr.Group = "g"
	lr.Members = []kmsg.LeaveGroupRequestMember{{InstanceID: &inst}}
	resp2 := await(t, call(e.c.LeaveGroup, lr))
	wantCode(t, "static leave", resp2.Members[0].ErrorCode, nil)
	if d := e.describe("g"); d.State != "Empty" {
		t.Fatalf("after static leave: %s", d.State)
	}
}

func TestStaticMemberKeptWhenNotRejoining(t *testing.T) {
	e := newEnv(t, nil)
	inst := "i1"
	o := joinOpts{rebalance: 200 * time.Millisecond}
	sm := &tmember{instance: &inst}
	e.joinAndSync("g", sm, o)
	ms := e.addMember("g", []*tmember{sm}, o)
	dyn := ms[1]
	// A rebalance in which the static member does not rejoin ends at the
	// rebalance timeout and keeps it in the group; leadership moves to a member
	// that rejoined.
	n := e.join("g", joinOpts{version: 3, rebalance: o.rebalance})
	d := e.join("g", joinOpts{memberID: dyn.id, rebalance: o.rebalance})
	rn, rd := await(t, n), await(t, d)
	wantCode(t, "newcomer", rn.ErrorCode, nil)
	wantCode(t, "dynamic", rd.ErrorCode, nil)
	if rd.LeaderID != dyn.id || len(rd.Members) != 3 || rn.Generation != dyn.gen+1 {
		t.Fatalf("join: leader %s members %d generation %d", rd.LeaderID, len(rd.Members), rn.Generation)
	}
	var ids []string
	for _, m := range e.describe("g").Members {
		ids = append(ids, m.MemberID)
	}
	if len(ids) != 3 || !slices.Contains(ids, sm.id) {
		t.Fatalf("static member %s dropped: %v", sm.id, ids)
	}
}

func TestInitialRebalanceDelay(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.InitialRebalanceDelay = 300 * time.Millisecond })
	a := e.join("g", joinOpts{version: 3})
	if !pending(a) {
		t.Fatal("first join of a new group answered before the initial delay")
	}
	b := e.join("g", joinOpts{version: 3})
	ra, rb := await(t, a), await(t, b)
	wantCode(t, "a", ra.ErrorCode, nil)
	wantCode(t, "b", rb.ErrorCode, nil)
	if ra.Generation != 1 || rb.Generation != 1 {
		t.Fatalf("both members should be in generation 1: %d %d", ra.Generation, rb.Generation)
	}
}

func TestGroupMaxSize(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxGroupSize = 1 })
	ms := e.addMember("g", nil, joinOpts{})
	jr := await(t, e.join("g", joinOpts{version: 3}))
	wantCode(t, "second member", jr.ErrorCode, kerr.GroupMaxSizeReached)
	wantCode(t, "member heartbeat", e.heartbeat("g", ms[0].id, ms[0].gen, nil), nil)
}

func TestLoweredMaxGroupSizeShedsMembersAfterLoad(t *testing.T) {
	e := newEnv(t, nil)
	o := joinOpts{rebalance: 200 * time.Millisecond}
	var ms []*tmember
	for range 3 {
		ms = e.addMember("g", ms, o)
	}
	e.c.Close()

	// The same log, now led by a coordinator with group.max.size 2.
	small := New(Config{NumPartitions: testPartitions, Log: e.log, MinSessionTimeout: time.Millisecond, MaxGroupSize: 2, Now: e.clk.now})
	t.Cleanup(small.Close)
	e.c = small
	for p := range int32(testPartitions) {
		small.BecomeLeader(p, 2)
	}
	e.waitLoaded()
	for _, m := range ms {
		wantCode(t, "heartbeat of an over-capacity group", e.heartbeat("g", m.id, m.gen, nil), kerr.RebalanceInProgress)
	}
	var chans []<-chan *kmsg.JoinGroupResponse
	for _, m := range ms {
		chans = append(chans, e.join("g", joinOpts{memberID: m.id, rebalance: o.rebalance}))
	}
	refused := 0
	for _, ch := range chans {
		jr := await(t, ch)
		switch jr.ErrorCode {
		case kerr.GroupMaxSizeReached.Code:
			refused++
		case 0:
			if jr.Generation != ms[0].gen+1 {
				t.Fatalf("generation %d", jr.Generation)
			}
		default:
			t.Fatalf("rejoin: %v", kerr.ErrorForCode(jr.ErrorCode))
		}
	}
	if refused != 1 || len(e.describe("g").Members) != 2 {
		t.Fatalf("%d members refused, %d left", refused, len(e.describe("g").Members))
	}
}
