package group

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestCommitAndFetch(t *testing.T) {
	e := newEnv(t, nil)
	ms := e.addMember("g", nil, joinOpts{})
	m := ms[0]
	cr := e.commit("g", m.id, m.gen, map[string]map[int32]int64{"a": {0: 10, 1: 11}, "b": {0: 20}})
	for tp, code := range commitCodes(cr) {
		wantCode(t, "commit "+tp.topic, code, nil)
	}
	code, got := e.fetchAll("g")
	wantCode(t, "fetch", code, nil)
	want := map[topicPartition]int64{{"a", 0}: 10, {"a", 1}: 11, {"b", 0}: 20}
	if len(got) != len(want) {
		t.Fatalf("fetched %v, want %v", got, want)
	}
	for tp, o := range want {
		if got[tp] != o {
			t.Fatalf("fetched %v, want %v", got, want)
		}
	}

	// Named partitions, one never committed; v5+ carries the leader epoch.
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 6
	r.Group = "g"
	r.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "a", Partitions: []int32{1, 5}}}
	resp := await(t, call(e.c.OffsetFetch, r))
	ps := resp.Topics[0].Partitions
	if ps[0].Offset != 11 || ps[0].LeaderEpoch != 3 || *ps[0].Metadata != "md" || ps[1].Offset != -1 || ps[1].LeaderEpoch != -1 {
		t.Fatalf("fetch named: %+v", ps)
	}

	// v8: several groups at once, one unknown.
	r8 := kmsg.NewPtrOffsetFetchRequest()
	r8.Version = 8
	r8.Groups = []kmsg.OffsetFetchRequestGroup{
		{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "b", Partitions: []int32{0}}}},
		{Group: "nope"},
	}
	resp8 := await(t, call(e.c.OffsetFetch, r8))
	if len(resp8.Groups) != 2 || resp8.Groups[0].Topics[0].Partitions[0].Offset != 20 || len(resp8.Groups[1].Topics) != 0 {
		t.Fatalf("fetch v8: %+v", resp8.Groups)
	}

	// The log holds Kafka's records: key v1 and value v3.
	var found bool
	for _, rec := range e.log.records(t, e.c.PartitionFor("g")) {
		pr, err := parseRecord(rec.key, rec.value)
		if err != nil {
			t.Fatal(err)
		}
		if pr.isOffset && pr.tp == (topicPartition{"b", 0}) {
			found = rec.key[1] == 1 && rec.value[1] == 3 && pr.offset.offset == 20 && pr.offset.leaderEpoch == 3 &&
				pr.offset.commitAt == e.clk.now().UnixMilli()
		}
	}
	if !found {
		t.Fatal("offset record for b/0 not in the log as key v1 / value v3")
	}

	// Bad commits.
	big := make([]byte, 4097)
	rb := kmsg.NewPtrOffsetCommitRequest()
	rb.Version = 8
	rb.Group, rb.MemberID, rb.Generation = "g", m.id, m.gen
	md := string(big)
	rb.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "a", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 99, Metadata: &md}}}}
	wantCode(t, "metadata too large", await(t, call(e.c.OffsetCommit, rb)).Topics[0].Partitions[0].ErrorCode, kerr.OffsetMetadataTooLarge)
	wantCode(t, "simple commit to a group with members",
		commitCodes(e.commit("g", "", -1, map[string]map[int32]int64{"a": {0: 1}}))[topicPartition{"a", 0}], kerr.UnknownMemberID)
	wantCode(t, "generation for an unknown group",
		commitCodes(e.commit("unknown", "x", 5, map[string]map[int32]int64{"a": {0: 1}}))[topicPartition{"a", 0}], kerr.IllegalGeneration)
	if _, got := e.fetchAll("g"); got[topicPartition{"a", 0}] != 10 {
		t.Fatalf("a rejected commit changed the offset: %v", got)
	}
}

func TestSimpleCommit(t *testing.T) {
	e := newEnv(t, nil)
	// v1 with an explicit commit timestamp, no member, generation -1.
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = 1
	r.Group = "tool"
	r.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 7, Timestamp: 1234, LeaderEpoch: -1}}}}
	wantCode(t, "v1 commit", await(t, call(e.c.OffsetCommit, r)).Topics[0].Partitions[0].ErrorCode, nil)
	if _, got := e.fetchAll("tool"); got[topicPartition{"t", 0}] != 7 {
		t.Fatalf("fetched %v", got)
	}
	if d := e.describe("tool"); d.State != "Empty" || d.ProtocolType != "" {
		t.Fatalf("simple group: %+v", d)
	}
	// v1 fetch: no top-level error, partitions listed with their errors.
	f := kmsg.NewPtrOffsetFetchRequest()
	f.Version = 1
	f.Group = "tool"
	f.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	if resp := await(t, call(e.c.OffsetFetch, f)); resp.Topics[0].Partitions[0].Offset != 7 {
		t.Fatalf("v1 fetch: %+v", resp.Topics)
	}
	e.c.Resign(e.c.PartitionFor("tool"))
	resp := await(t, call(e.c.OffsetFetch, f))
	wantCode(t, "v1 fetch from a non-coordinator", resp.Topics[0].Partitions[0].ErrorCode, kerr.NotCoordinator)
}

func TestCommitAppendFailure(t *testing.T) {
	e := newEnv(t, nil)
	for _, tc := range []struct {
		err  *kerr.Error
		want *kerr.Error
	}{
		{kerr.NotEnoughReplicas, kerr.CoordinatorNotAvailable},
		{kerr.NotLeaderForPartition, kerr.NotCoordinator},
		{kerr.RequestTimedOut, kerr.RequestTimedOut},
		{kerr.MessageTooLarge, kerr.InvalidCommitOffsetSize},
	} {
		e.log.setAppendErr(tc.err)
		cr := e.commit("s", "", -1, map[string]map[int32]int64{"t": {0: 5}})
		wantCode(t, "commit failing with "+tc.err.Message, commitCodes(cr)[topicPartition{"t", 0}], tc.want)
	}
	e.log.setAppendErr(nil)
	if _, got := e.fetchAll("s"); len(got) != 0 {
		t.Fatalf("failed commits are visible: %v", got)
	}

	// A failed store of the leader's assignment fails the sync and rebalances.
	jr := await(t, e.join("g", joinOpts{version: 3}))
	e.log.setAppendErr(kerr.NotEnoughReplicas)
	sr := await(t, e.sync("g", jr.MemberID, jr.Generation, nil, map[string][]byte{jr.MemberID: []byte("x")}))
	wantCode(t, "sync with a failed store", sr.ErrorCode, kerr.CoordinatorNotAvailable)
	if d := e.describe("g"); d.State != "PreparingRebalance" {
		t.Fatalf("after failed store: %s", d.State)
	}
}

func TestReloadAfterResign(t *testing.T) {
	e := newEnv(t, nil)
	o := joinOpts{topics: []string{"a"}}
	var ms []*tmember
	for range 2 {
		ms = e.addMember("g", ms, o)
	}
	m := ms[0]
	e.commit("g", m.id, m.gen, map[string]map[int32]int64{"a": {0: 100, 1: 101}})
	e.commit("g", m.id, m.gen, map[string]map[int32]int64{"a": {0: 150}})
	e.commit("simple", "", -1, map[string]map[int32]int64{"x": {3: 33}})
	before := e.describe("g")
	_, offsBefore := e.fetchAll("g")

	p := e.c.PartitionFor("g")
	// A join parked when the partition moves away is answered NOT_COORDINATOR.
	parked := e.join("g", joinOpts{version: 3})
	e.c.Resign(p)
	wantCode(t, "parked join at resign", await(t, parked).ErrorCode, kerr.NotCoordinator)
	wantCode(t, "heartbeat after resign", e.heartbeat("g", m.id, m.gen, nil), kerr.NotCoordinator)
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version = 3
	lr.Group = "g"
	lr.Members = []kmsg.LeaveGroupRequestMember{{MemberID: m.id}}
	if resp := await(t, call(e.c.LeaveGroup, lr)); resp.ErrorCode != kerr.NotCoordinator.Code || len(resp.Members) != 0 {
		t.Fatalf("leave after resign: %v, %d members", kerr.ErrorForCode(resp.ErrorCode), len(resp.Members))
	}
	if code, _ := e.fetchAll("g"); code != kerr.NotCoordinator.Code {
		t.Fatalf("fetch after resign: %v", kerr.ErrorForCode(code))
	}

	gate := make(chan struct{})
	e.log.mu.Lock()
	e.log.scanGate = gate
	e.log.mu.Unlock()
	e.c.BecomeLeader(p, 2)
	if code, _ := e.fetchAll("g"); code != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("fetch while loading: %v", kerr.ErrorForCode(code))
	}
	wantCode(t, "heartbeat while loading", e.heartbeat("g", m.id, m.gen, nil), nil)
	wantCode(t, "sync while loading", await(t, e.sync("g", m.id, m.gen, nil, nil)).ErrorCode, kerr.RebalanceInProgress)
	wantCode(t, "join while loading", await(t, e.join("g", joinOpts{version: 3})).ErrorCode, kerr.CoordinatorLoadInProgress)
	close(gate)
	e.waitLoaded()

	after := e.describe("g")
	if after.State != "Stable" || after.Protocol != before.Protocol || after.ProtocolType != before.ProtocolType ||
		len(after.Members) != len(before.Members) {
		t.Fatalf("reloaded group %+v\nwas %+v", after, before)
	}
	for i := range before.Members {
		b, a := before.Members[i], after.Members[i]
		if a.MemberID != b.MemberID || a.ClientID != b.ClientID || string(a.MemberAssignment) != string(b.MemberAssignment) ||
			string(a.ProtocolMetadata) != string(b.ProtocolMetadata) {
			t.Fatalf("reloaded member %+v\nwas %+v", a, b)
		}
	}
	_, offsAfter := e.fetchAll("g")
	if len(offsAfter) != 2 || offsAfter[topicPartition{"a", 0}] != 150 || offsAfter[topicPartition{"a", 1}] != 101 {
		t.Fatalf("reloaded offsets %v, were %v", offsAfter, offsBefore)
	}
	if _, so := e.fetchAll("simple"); so[topicPartition{"x", 3}] != 33 {
		t.Fatalf("reloaded simple offsets %v", so)
	}
	// Members carry on in their generation.
	for _, mm := range ms {
		wantCode(t, "heartbeat after reload", e.heartbeat("g", mm.id, mm.gen, nil), nil)
	}
	// Offset delete on a consumer group reads the reloaded subscriptions.
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g"
	od.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "a", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	wantCode(t, "delete subscribed after reload", await(t, call(e.c.OffsetDelete, od)).Topics[0].Partitions[0].ErrorCode, kerr.GroupSubscribedToTopic)
}

func TestDeleteGroups(t *testing.T) {
	e := newEnv(t, nil)
	e.addMember("busy", nil, joinOpts{})
	e.commit("idle", "", -1, map[string]map[int32]int64{"t": {0: 1, 1: 2}})
	r := kmsg.NewPtrDeleteGroupsRequest()
	r.Version = 2
	r.Groups = []string{"busy", "idle", "never"}
	resp := await(t, call(e.c.DeleteGroups, r))
	codes := map[string]int16{}
	for _, g := range resp.Groups {
		codes[g.Group] = g.ErrorCode
	}
	wantCode(t, "delete group with members", codes["busy"], kerr.NonEmptyGroup)
	wantCode(t, "delete empty group", codes["idle"], nil)
	wantCode(t, "delete unknown group", codes["never"], kerr.GroupIDNotFound)
	if d := e.describe("idle"); d.State != "Dead" {
		t.Fatalf("deleted group described as %s", d.State)
	}
	if _, got := e.fetchAll("idle"); len(got) != 0 {
		t.Fatalf("deleted group's offsets %v", got)
	}
	// Tombstones for both offsets and the group.
	p := e.c.PartitionFor("idle")
	tombs := 0
	for _, rec := range e.log.records(t, p) {
		if pr, err := parseRecord(rec.key, rec.value); err == nil && pr.group == "idle" && rec.value == nil {
			tombs++
		}
	}
	if tombs != 3 {
		t.Fatalf("%d tombstones, want 3", tombs)
	}
	e.c.Resign(p)
	e.c.BecomeLeader(p, 2)
	e.waitLoaded()
	if d := e.describe("idle"); d.State != "Dead" {
		t.Fatalf("deleted group reloaded as %s", d.State)
	}
}

func TestOffsetDelete(t *testing.T) {
	e := newEnv(t, nil)
	ms := e.addMember("g", nil, joinOpts{topics: []string{"a"}})
	e.commit("g", ms[0].id, ms[0].gen, map[string]map[int32]int64{"a": {0: 1}, "b": {0: 2}})
	r := kmsg.NewPtrOffsetDeleteRequest()
	r.Group = "g"
	r.Topics = []kmsg.OffsetDeleteRequestTopic{
		{Topic: "a", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}},
		{Topic: "b", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}},
	}
	resp := await(t, call(e.c.OffsetDelete, r))
	wantCode(t, "top", resp.ErrorCode, nil)
	wantCode(t, "subscribed topic", resp.Topics[0].Partitions[0].ErrorCode, kerr.GroupSubscribedToTopic)
	wantCode(t, "unsubscribed topic", resp.Topics[1].Partitions[0].ErrorCode, nil)
	_, got := e.fetchAll("g")
	if len(got) != 1 || got[topicPartition{"a", 0}] != 1 {
		t.Fatalf("after delete: %v", got)
	}
	// An empty group loses any offset.
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version = 3
	lr.Group = "g"
	lr.Members = []kmsg.LeaveGroupRequestMember{{MemberID: ms[0].id}}
	await(t, call(e.c.LeaveGroup, lr))
	resp = await(t, call(e.c.OffsetDelete, r))
	wantCode(t, "empty group a", resp.Topics[0].Partitions[0].ErrorCode, nil)
	if _, got := e.fetchAll("g"); len(got) != 0 {
		t.Fatalf("after delete on empty group: %v", got)
	}
	r.Group = "none"
	wantCode(t, "unknown group", await(t, call(e.c.OffsetDelete, r)).ErrorCode, kerr.GroupIDNotFound)

	// A group of another protocol type with members cannot say what it consumes.
	jr := joinReq("conn", joinOpts{version: 3})
	jr.ProtocolType = "connect"
	await(t, call(e.c.JoinGroup, jr))
	r.Group = "conn"
	wantCode(t, "non-consumer group", await(t, call(e.c.OffsetDelete, r)).ErrorCode, kerr.NonEmptyGroup)
}

func TestListGroupsStateFilter(t *testing.T) {
	e := newEnv(t, nil)
	e.addMember("stable-1", nil, joinOpts{})
	e.addMember("stable-2", nil, joinOpts{})
	e.commit("empty-1", "", -1, map[string]map[int32]int64{"t": {0: 1}})
	list := func(version int16, states ...string) []string {
		r := kmsg.NewPtrListGroupsRequest()
		r.Version = version
		r.StatesFilter = states
		resp := await(t, call(e.c.ListGroups, r))
		wantCode(t, "list", resp.ErrorCode, nil)
		var out []string
		for _, g := range resp.Groups {
			out = append(out, g.Group+"/"+g.GroupState+"/"+g.ProtocolType)
		}
		return out
	}
	if got := list(4); !slices.Equal(got, []string{"empty-1/Empty/", "stable-1/Stable/consumer", "stable-2/Stable/consumer"}) {
		t.Fatalf("all groups: %v", got)
	}
	if got := list(4, "Stable"); len(got) != 2 {
		t.Fatalf("stable groups: %v", got)
	}
	if got := list(4, "empty"); !slices.Equal(got, []string{"empty-1/Empty/"}) {
		t.Fatalf("empty groups: %v", got)
	}
	if got := list(4, "Dead", "PreparingRebalance"); len(got) != 0 {
		t.Fatalf("dead or preparing: %v", got)
	}
}

func TestOffsetsExpiry(t *testing.T) {
	const retention = 24 * time.Hour
	e := newEnv(t, func(c *Config) { c.OffsetsRetention = retention })

	// Standalone commits expire retention after the commit.
	e.commit("simple", "", -1, map[string]map[int32]int64{"t": {0: 1}})
	// A consumer group with members loses only offsets of topics it does not
	// subscribe to; once empty, all expire retention after it became empty,
	// however old the commits are.
	ms := e.addMember("cg", nil, joinOpts{topics: []string{"t"}})
	e.commit("cg", ms[0].id, ms[0].gen, map[string]map[int32]int64{"t": {0: 5}, "old": {0: 5}})
	e.clk.advance(time.Hour)
	e.commit("simple", "", -1, map[string]map[int32]int64{"t": {1: 1}})
	e.clk.advance(retention - time.Hour)
	e.c.expireOffsets()
	if _, got := e.fetchAll("simple"); len(got) != 1 || got[topicPartition{"t", 1}] != 1 {
		t.Fatalf("simple group after first expiry: %v", got)
	}
	if _, got := e.fetchAll("cg"); len(got) != 1 || got[topicPartition{"t", 0}] != 5 {
		t.Fatalf("consumer group with members after expiry: %v", got)
	}
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version = 3
	lr.Group = "cg"
	lr.Members = []kmsg.LeaveGroupRequestMember{{MemberID: ms[0].id}}
	await(t, call(e.c.LeaveGroup, lr))

	e.clk.advance(time.Hour)
	e.c.expireOffsets()
	if d := e.describe("simple"); d.State != "Dead" {
		t.Fatalf("simple group with no offsets left is %s", d.State)
	}
	if _, got := e.fetchAll("cg"); len(got) != 1 {
		t.Fatalf("empty consumer group expired too early: %v", got)
	}
	e.clk.advance(retention - time.Hour - time.Millisecond)
	e.c.expireOffsets()
	if _, got := e.fetchAll("cg"); len(got) != 1 {
		t.Fatalf("empty consumer group expired before retention since empty: %v", got)
	}
	e.clk.advance(time.Millisecond)
	e.c.expireOffsets()
	if d := e.describe("cg"); d.State != "Dead" {
		t.Fatalf("expired consumer group is %s", d.State)
	}

	// A v2 commit with its own retention time expires then (old semantics).
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = 2
	r.Group = "v2"
	r.RetentionTimeMillis = time.Minute.Milliseconds()
	r.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 3}}}}
	await(t, call(e.c.OffsetCommit, r))
	e.clk.advance(time.Minute)
	e.c.expireOffsets()
	if d := e.describe("v2"); d.State != "Dead" {
		t.Fatalf("v2 commit with a one-minute retention: group %s", d.State)
	}

	// Expired offsets stay expired after a reload: tombstones were written.
	p := e.c.PartitionFor("cg")
	e.c.Resign(p)
	e.c.BecomeLeader(p, 2)
	e.waitLoaded()
	if _, got := e.fetchAll("cg"); len(got) != 0 {
		t.Fatalf("expired offsets came back: %v", got)
	}
}

func TestConcurrentCommitsShareAppends(t *testing.T) {
	e := newEnv(t, nil)
	gate := make(chan struct{})
	e.log.mu.Lock()
	e.log.appendGate = gate
	e.log.mu.Unlock()
	const n = 50
	var chans []<-chan *kmsg.OffsetCommitResponse
	for i := range n {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version = 8
		r.Group = "busy"
		r.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: int64(i), LeaderEpoch: -1}}}}
		chans = append(chans, call(e.c.OffsetCommit, r))
	}
	for _, ch := range chans {
		if !pending(ch) {
			t.Fatal("a commit was acknowledged before its append")
		}
	}
	e.log.mu.Lock()
	e.log.appendGate = nil
	e.log.mu.Unlock()
	close(gate)
	for _, ch := range chans {
		wantCode(t, "commit", await(t, ch).Topics[0].Partitions[0].ErrorCode, nil)
	}
	p := e.c.PartitionFor("busy")
	e.log.mu.Lock()
	batches := len(e.log.batches[p])
	e.log.mu.Unlock()
	if batches >= n {
		t.Fatalf("%d commits took %d appends: queued commits should share one", n, batches)
	}
	// The log's last record for the key and memory agree.
	recs := e.log.records(t, p)
	last, _ := parseRecord(recs[len(recs)-1].key, recs[len(recs)-1].value)
	if _, got := e.fetchAll("busy"); got[topicPartition{"t", 0}] != last.offset.offset || last.offset.offset != n-1 {
		t.Fatalf("memory %v, log's last %d", got, last.offset.offset)
	}
}

func TestLoadSkipsUnreadableData(t *testing.T) {
	e := newEnv(t, nil)
	e.commit("g", "", -1, map[string]map[int32]int64{"t": {0: 9}})
	p := e.c.PartitionFor("g")
	e.log.mu.Lock()
	e.log.batches[p] = append(e.log.batches[p],
		[]byte("not a batch at all, but long enough to have a header of sixty-one bytes"),
		buildBatch([]record{{groupKey("g"), []byte{0, 3, 0}}}, time.UnixMilli(1)),
		buildBatch([]record{{[]byte{0, 42, 1, 2, 3}, []byte{1}}}, time.UnixMilli(1)))
	e.log.mu.Unlock()
	e.c.Resign(p)
	e.c.BecomeLeader(p, 2)
	e.waitLoaded()
	if _, got := e.fetchAll("g"); got[topicPartition{"t", 0}] != 9 {
		t.Fatalf("offsets after loading past bad data: %v", got)
	}
}
