package group

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/batch"
)

// memLog is an in-memory append-only __consumer_offsets: a list of batches per
// partition with offsets assigned as a leader would.
type memLog struct {
	mu         sync.Mutex
	batches    map[int32][][]byte
	next       map[int32]int64
	appendErr  error
	appendGate chan struct{} // when set, Append waits for it to close
	scanGate   chan struct{} // when set, Scan waits for it to close
}

func newMemLog() *memLog {
	return &memLog{batches: map[int32][][]byte{}, next: map[int32]int64{}}
}

func (l *memLog) Append(ctx context.Context, p int32, b []byte) (int64, error) {
	if !batch.CRCValid(b) {
		return -1, errors.New("memLog: batch with a bad CRC")
	}
	h, err := batch.ParseHeader(b)
	if err != nil {
		return -1, err
	}
	if h.Size() != int64(len(b)) || (h.ProducerID != -1) != h.Transactional() || h.Compression() != 0 {
		return -1, errors.New("memLog: unexpected batch header")
	}
	l.mu.Lock()
	gate := l.appendGate
	l.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return -1, ctx.Err()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.appendErr != nil {
		return -1, l.appendErr
	}
	b = append([]byte(nil), b...)
	base := l.next[p]
	batch.SetBaseOffset(b, base)
	l.batches[p] = append(l.batches[p], b)
	l.next[p] = base + int64(h.NumRecords)
	return base, nil
}

func (l *memLog) Scan(ctx context.Context, p int32, fn func([]byte) error) error {
	l.mu.Lock()
	gate := l.scanGate
	l.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	l.mu.Lock()
	bs := append([][]byte(nil), l.batches[p]...)
	l.mu.Unlock()
	for _, b := range bs {
		if err := fn(b); err != nil {
			return err
		}
	}
	return nil
}

func (l *memLog) setAppendErr(err error) {
	l.mu.Lock()
	l.appendErr = err
	l.mu.Unlock()
}

// records lists every record of partition p in log order (nil value: tombstone).
func (l *memLog) records(t *testing.T, p int32) []record {
	t.Helper()
	var out []record
	err := l.Scan(context.Background(), p, func(b []byte) error {
		return readBatch(context.Background(), nil, b, func(_ int64, k, v []byte) error {
			out = append(out, record{k, v})
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// clock is an adjustable Now for retention tests.
type clock struct{ ms atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ms.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	return c
}
func (c *clock) now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *clock) advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

const testPartitions = 4

type env struct {
	t   *testing.T
	c   *Coordinator
	log *memLog
	clk *clock
}

func newEnv(t *testing.T, mod func(*Config)) *env {
	t.Helper()
	e := &env{t: t, log: newMemLog(), clk: newClock()}
	cfg := Config{
		BrokerID:          1,
		NumPartitions:     testPartitions,
		Log:               e.log,
		MinSessionTimeout: time.Millisecond,
		Now:               e.clk.now,
	}
	if mod != nil {
		mod(&cfg)
	}
	e.c = New(cfg)
	t.Cleanup(e.c.Close)
	for p := range int32(testPartitions) {
		e.c.BecomeLeader(p, 1)
	}
	e.waitLoaded()
	return e
}

func (e *env) waitLoaded() {
	e.t.Helper()
	waitFor(e.t, "partitions loaded", func() bool {
		for _, s := range e.c.shards {
			s.mu.Lock()
			st := s.status
			s.mu.Unlock()
			if st == shardLoading {
				return false
			}
		}
		return true
	})
}

// waitFor polls cond until it holds or a deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// await returns what ch delivers, failing the test after a deadline.
func await[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
		panic("unreachable")
	}
}

// pending reports whether ch has not delivered yet.
func pending[T any](ch <-chan T) bool {
	select {
	case v := <-ch:
		_ = v
		return false
	default:
		return true
	}
}

func call[Req any, Resp any](fn func(context.Context, Req, func(Resp)), req Req) <-chan Resp {
	ch := make(chan Resp, 1)
	fn(WithClient(context.Background(), "client", "/127.0.0.1"), req, func(r Resp) { ch <- r })
	return ch
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	var w int16
	if want != nil {
		w = want.Code
	}
	if got != w {
		t.Fatalf("%s: error %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

func subscription(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = topics
	return m.AppendTo(nil)
}

type joinOpts struct {
	version   int16
	memberID  string
	instance  *string
	session   time.Duration
	rebalance time.Duration
	protocols []string
	topics    []string
}

func joinReq(group string, o joinOpts) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = o.version
	if r.Version == 0 {
		r.Version = 5
	}
	r.Group = group
	r.MemberID = o.memberID
	r.InstanceID = o.instance
	if o.session == 0 {
		o.session = 10 * time.Second
	}
	r.SessionTimeoutMillis = int32(o.session.Milliseconds())
	if o.rebalance == 0 {
		o.rebalance = 5 * time.Second
	}
	r.RebalanceTimeoutMillis = int32(o.rebalance.Milliseconds())
	r.ProtocolType = consumerProtocolType
	if o.protocols == nil {
		o.protocols = []string{"range"}
	}
	topics := o.topics
	if topics == nil {
		topics = []string{"t"}
	}
	for _, p := range o.protocols {
		rp := kmsg.NewJoinGroupRequestProtocol()
		rp.Name = p
		rp.Metadata = subscription(topics...)
		r.Protocols = append(r.Protocols, rp)
	}
	return r
}

func (e *env) join(group string, o joinOpts) <-chan *kmsg.JoinGroupResponse {
	return call(e.c.JoinGroup, joinReq(group, o))
}

func (e *env) sync(group, member string, gen int32, instance *string, assign map[string][]byte) <-chan *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version = 5
	r.Group, r.MemberID, r.Generation, r.InstanceID = group, member, gen, instance
	for id, a := range assign {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = id, a
		r.GroupAssignment = append(r.GroupAssignment, ga)
	}
	return call(e.c.SyncGroup, r)
}

func (e *env) heartbeat(group, member string, gen int32, instance *string) int16 {
	r := kmsg.NewPtrHeartbeatRequest()
	r.Version = 4
	r.Group, r.MemberID, r.Generation, r.InstanceID = group, member, gen, instance
	return await(e.t, call(e.c.Heartbeat, r)).ErrorCode
}

func (e *env) describe(group string) kmsg.DescribeGroupsResponseGroup {
	e.t.Helper()
	r := kmsg.NewPtrDescribeGroupsRequest()
	r.Version = 5
	r.Groups = []string{group}
	return await(e.t, call(e.c.DescribeGroups, r)).Groups[0]
}

func (e *env) commit(group, member string, gen int32, offsets map[string]map[int32]int64) *kmsg.OffsetCommitResponse {
	e.t.Helper()
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = 8
	r.Group, r.MemberID, r.Generation = group, member, gen
	for topic, ps := range offsets {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		for p, o := range ps {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, o, 3
			md := "md"
			rp.Metadata = &md
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	return await(e.t, call(e.c.OffsetCommit, r))
}

// commitCodes flattens a commit response to topic/partition -> error code.
func commitCodes(resp *kmsg.OffsetCommitResponse) map[topicPartition]int16 {
	out := map[topicPartition]int16{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[topicPartition{t.Topic, p.Partition}] = p.ErrorCode
		}
	}
	return out
}

// fetchAll returns the group's committed offsets (v7, all topics).
func (e *env) fetchAll(group string) (int16, map[topicPartition]int64) {
	e.t.Helper()
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 7
	r.Group = group
	resp := await(e.t, call(e.c.OffsetFetch, r))
	out := map[topicPartition]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[topicPartition{t.Topic, p.Partition}] = p.Offset
		}
	}
	return resp.ErrorCode, out
}

// member is a test group member driven through join and sync.
type tmember struct {
	id       string
	gen      int32
	leader   string
	members  []string
	instance *string
}

// joinAndSync runs a member that is the only one to (re)join: join, and sync
// with an assignment naming each member when it leads.
func (e *env) joinAndSync(group string, m *tmember, o joinOpts) {
	e.t.Helper()
	o.memberID = m.id
	o.instance = m.instance
	jr := await(e.t, e.join(group, o))
	wantCode(e.t, "join", jr.ErrorCode, nil)
	e.adopt(m, jr)
	sr := await(e.t, e.sync(group, m.id, m.gen, m.instance, e.assignFor(m)))
	wantCode(e.t, "sync", sr.ErrorCode, nil)
}

func (e *env) adopt(m *tmember, jr *kmsg.JoinGroupResponse) {
	m.id, m.gen, m.leader = jr.MemberID, jr.Generation, jr.LeaderID
	m.members = nil
	for _, x := range jr.Members {
		m.members = append(m.members, x.MemberID)
	}
}

func (e *env) assignFor(m *tmember) map[string][]byte {
	if m.id != m.leader {
		return nil
	}
	out := map[string][]byte{}
	for _, id := range m.members {
		out[id] = []byte("assigned:" + id)
	}
	return out
}
