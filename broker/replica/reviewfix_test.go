package replica

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	klog "github.com/ktoolhq/ktool/broker/log"
	"github.com/ktoolhq/ktool/broker/protocol"
)

func testBatch(n int) []byte {
	var recs []byte
	for i := 0; i < n; i++ {
		body := []byte{0}
		body = binary.AppendVarint(body, int64(i))
		body = binary.AppendVarint(body, int64(i))
		key := fmt.Appendf(nil, "k%d", i)
		body = binary.AppendVarint(body, int64(len(key)))
		body = append(body, key...)
		body = binary.AppendVarint(body, 1)
		body = append(body, 'v')
		body = binary.AppendVarint(body, 0)
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	b := kmsg.RecordBatch{Length: int32(61 - 12 + len(recs)), Magic: 2, LastOffsetDelta: int32(n - 1),
		FirstTimestamp: 1000, MaxTimestamp: 1000 + int64(n-1), ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(n), Records: recs}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

func testPartition(t *testing.T) *Partition {
	l, err := klog.Open(t.TempDir()+"/t-0", klog.DefaultConfig(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return newPartition("t", 0, 1, l, slog.New(slog.DiscardHandler))
}

type fakeIsr struct{ v int32 }

func (f *fakeIsr) WriteIsr(ctx context.Context, tp TP, st State) (int32, error) {
	f.v++
	return f.v, nil
}

type fakeLeader struct {
	ofle    func(tp TP, epoch int32) (int32, int64)
	fetch   func(ctx context.Context, req *kmsg.FetchRequest) *kmsg.FetchResponse
	mu      sync.Mutex
	ofleLog []string
}

func (f *fakeLeader) Handle(ctx context.Context, c *protocol.Conn, h protocol.Header, req kmsg.Request, respond func(protocol.Response)) {
	switch r := req.(type) {
	case *kmsg.OffsetForLeaderEpochRequest:
		resp := r.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				rp.Partition = p.Partition
				rp.LeaderEpoch, rp.EndOffset = f.ofle(TP{t.Topic, p.Partition}, p.LeaderEpoch)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		respond(protocol.Response{Msg: resp})
	case *kmsg.FetchRequest:
		go func() { respond(protocol.Response{Msg: f.fetch(ctx, r)}) }()
	}
}

func startFake(t *testing.T, f *fakeLeader) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &protocol.Server{Handler: f}
	go srv.Serve(ln)
	t.Cleanup(func() { ctx, c := context.WithTimeout(context.Background(), time.Second); defer c(); srv.Shutdown(ctx) })
	return ln.Addr().String()
}

func emptyFetch(req *kmsg.FetchRequest) *kmsg.FetchResponse {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func testManager(t *testing.T, self int32) *Manager {
	m := NewManager(Config{BrokerID: self, LogDirs: []string{t.TempDir()}, Isr: &fakeIsr{},
		Logger:        slog.New(slog.DiscardHandler),
		TopicSettings: func(string) Settings { return Settings{Log: klog.DefaultConfig(), MinISR: 1} },
		Fetch:         FetcherConfig{MaxWait: 200 * time.Millisecond, Backoff: 20 * time.Millisecond, MaxBytes: 1 << 20, PartitionMaxByte: 1 << 20}})
	t.Cleanup(func() { m.Shutdown() })
	return m
}

func waitFor(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The high watermark waits for a follower whose ISR expansion is still being
// written (Kafka's maximal ISR): otherwise a write acknowledged meanwhile could be
// missing from a member of the ISR once the expansion lands.
func TestHighWatermarkWaitsForPendingIsrMember(t *testing.T) {
	p := testPartition(t)
	p.makeLeader(State{Leader: 1, LeaderEpoch: 1, ISR: []int32{1}, Replicas: []int32{1, 2}})
	if _, err := p.AppendAsLeader(testBatch(5), 1); err != nil {
		t.Fatal(err)
	}
	_, _, expand, err := p.ReadForFollower(2, 5, 1<<20, 1, true)
	if err != nil || expand == nil {
		t.Fatalf("expected an ISR expansion, err=%v", err)
	}
	if _, err := p.AppendAsLeader(testBatch(5), -1); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != 5 {
		t.Fatalf("high watermark %d passed the pending member's log end 5", hw)
	}
	p.isrWritten(*expand, true)
	if _, _, _, err := p.ReadForFollower(2, 10, 1<<20, 1, true); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != 10 {
		t.Fatalf("high watermark %d after the new member caught up, want 10", hw)
	}
}

// A LeaderAndIsr at the current epoch (the controller resends states at
// failover, possibly older than the leader's own ISR change) changes nothing.
func TestSameEpochLeaderAndIsrIgnored(t *testing.T) {
	m := NewManager(Config{BrokerID: 1, LogDirs: []string{t.TempDir()}, Isr: &fakeIsr{},
		TopicSettings: func(string) Settings { return Settings{Log: klog.DefaultConfig(), MinISR: 1} }})
	defer m.Shutdown()
	tp := TP{"t", 0}
	st := State{Leader: 1, LeaderEpoch: 1, ISR: []int32{1}, Replicas: []int32{1, 2}, ZkVersion: 0}
	if err := m.apply(LeaderUpdate{TP: tp, State: st}, nil); err != nil {
		t.Fatal(err)
	}
	p := m.Get(tp)
	_, _, expand, _ := p.ReadForFollower(2, 0, 1<<20, 1, true)
	if expand == nil {
		t.Fatal("no expansion")
	}
	m.ExpandIsr(p, *expand)
	if err := m.apply(LeaderUpdate{TP: tp, State: st}, nil); err != nil {
		t.Fatal(err)
	}
	if got := p.State(); len(got.ISR) != 2 || got.ZkVersion != 1 {
		t.Fatalf("a same-epoch resend reverted the ISR to %v (version %d)", got.ISR, got.ZkVersion)
	}
}

// KIP-279: when the leader never had the follower's latest epoch, the follower
// truncates in rounds until both agree.
func TestFollowerTruncationRounds(t *testing.T) {
	f := &fakeLeader{}
	// The leader's epochs: 1 at [0,10), 2 at [10,30), 4 from 30.
	f.ofle = func(tp TP, e int32) (int32, int64) {
		f.mu.Lock()
		f.ofleLog = append(f.ofleLog, fmt.Sprint(e))
		f.mu.Unlock()
		switch {
		case e >= 4:
			return 4, 30
		case e >= 2:
			return 2, 30
		case e == 1:
			return 1, 10
		}
		return -1, -1
	}
	f.fetch = func(ctx context.Context, r *kmsg.FetchRequest) *kmsg.FetchResponse { return emptyFetch(r) }
	addr := startFake(t, f)
	m := testManager(t, 2)
	tp := TP{"t", 0}
	if err := m.apply(LeaderUpdate{TP: tp, State: State{Leader: 2, LeaderEpoch: 1, ISR: []int32{2}, Replicas: []int32{2, 3}}}, nil); err != nil {
		t.Fatal(err)
	}
	p := m.Get(tp)
	if _, err := p.AppendAsLeader(testBatch(10), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(testBatch(10), 1); err != nil {
		t.Fatal(err)
	}
	// This broker led epoch 3 (which the leader of epoch 4 never saw), then follows.
	if err := m.apply(LeaderUpdate{TP: tp, State: State{Leader: 2, LeaderEpoch: 3, ISR: []int32{2}, Replicas: []int32{2, 3}}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := m.apply(LeaderUpdate{TP: tp, State: State{Leader: 3, LeaderEpoch: 4, ISR: []int32{2, 3}, Replicas: []int32{2, 3}}}, map[int32]string{3: addr}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a second OffsetForLeaderEpoch round", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.ofleLog) >= 2
	})
	waitFor(t, "truncation to offset 10", func() bool { return p.Log().LogEndOffset() == 10 })
}

// A fetch answer from the old leader that arrives after the partition moved to
// another role is dropped.
func TestStaleFetchAnswerDropped(t *testing.T) {
	f := &fakeLeader{}
	f.ofle = func(tp TP, e int32) (int32, int64) { return -1, -1 }
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	var served sync.WaitGroup
	served.Add(1)
	var once sync.Once
	f.fetch = func(ctx context.Context, r *kmsg.FetchRequest) *kmsg.FetchResponse {
		resp := emptyFetch(r)
		first := false
		once.Do(func() { first = true })
		if !first {
			return resp
		}
		started <- struct{}{}
		<-release
		defer served.Done()
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				if resp.Topics[i].Partitions[j].Partition == 0 {
					resp.Topics[i].Partitions[j].RecordBatches = testBatch(5)
					resp.Topics[i].Partitions[j].HighWatermark = 5
				}
			}
		}
		return resp
	}
	addr := startFake(t, f)
	m := testManager(t, 2)
	old := State{Leader: 1, LeaderEpoch: 5, ISR: []int32{1, 2}, Replicas: []int32{1, 2}}
	for _, p := range []int32{0, 1} {
		if err := m.apply(LeaderUpdate{TP: TP{"t", p}, State: old}, map[int32]string{1: addr}); err != nil {
			t.Fatal(err)
		}
	}
	<-started
	if err := m.apply(LeaderUpdate{TP: TP{"t", 0}, State: State{Leader: 2, LeaderEpoch: 6, ISR: []int32{2}, Replicas: []int32{1, 2}}}, nil); err != nil {
		t.Fatal(err)
	}
	p := m.Get(TP{"t", 0})
	close(release)
	served.Wait()
	// The fetcher applies an answer before it asks again: once partition 1 is
	// fetched after the stale answer, that answer has been handled.
	other := m.Get(TP{"t", 1})
	waitFor(t, "the next fetch of partition 1", func() bool { return other.Log().LogEndOffset() == 0 && p.Log().LatestEpoch() == 6 })
	if p.Log().LogEndOffset() != 0 {
		t.Fatalf("the old leader's records were appended to a partition this broker now leads (log end %d)", p.Log().LogEndOffset())
	}
}

// A partition whose fetch failed waits replica.fetch.backoff.ms before it is
// asked for again, instead of spinning against the leader.
func TestFetchErrorDelaysPartition(t *testing.T) {
	m := testManager(t, 2)
	tp := TP{"t", 0}
	if err := m.apply(LeaderUpdate{TP: tp, State: State{Leader: 2, LeaderEpoch: 1, ISR: []int32{2}, Replicas: []int32{2}}}, nil); err != nil {
		t.Fatal(err)
	}
	f := &fetcher{m: m, logger: slog.New(slog.DiscardHandler), parts: map[TP]*fetchState{}}
	st := &fetchState{p: m.Get(tp)}
	f.parts[tp] = st
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.ErrorCode = kerr.NotLeaderForPartition.Code
	f.handlePartition(st, rp)
	if !time.Now().Before(st.delayUntil) {
		t.Fatal("a failed partition is not delayed")
	}
	fetched, err := f.fetchOnce(context.Background(), f.parts)
	if err != nil || fetched {
		t.Fatalf("a delayed partition was fetched (fetched=%v err=%v)", fetched, err)
	}
}
