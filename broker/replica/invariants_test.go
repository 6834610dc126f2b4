package replica

import (
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	klog "github.com/ktoolhq/ktool/broker/log"
)

// testBatchAt is testBatch(n) at base offset base, written at leader epoch
// epoch (neither is covered by the batch CRC).
func testBatchAt(base int64, epoch int32, n int) []byte {
	b := testBatch(n)
	binary.BigEndian.PutUint64(b[0:], uint64(base))
	binary.BigEndian.PutUint32(b[12:], uint32(epoch))
	return b
}

// Invariant: a leader never appends a record fetched from another broker once
// it has taken its epoch. Here the fetcher still holds the partition (as if
// its removal had not happened yet, or its answer were in flight) when the
// partition becomes leader: the answer must be dropped by the partition
// itself, which checks its role and leader epoch under its lock.
func TestFetchedRecordsNeverReachALeader(t *testing.T) {
	f := &fakeLeader{}
	f.ofle = func(tp TP, e int32) (int32, int64) { return -1, -1 }
	f.fetch = func(ctx context.Context, r *kmsg.FetchRequest) *kmsg.FetchResponse {
		<-ctx.Done()
		return emptyFetch(r)
	}
	addr := startFake(t, f)
	m := testManager(t, 2)
	tp := TP{"t", 0}
	if err := m.apply(LeaderUpdate{TP: tp, State: State{Leader: 1, LeaderEpoch: 5, ISR: []int32{1, 2}, Replicas: []int32{1, 2}}}, map[int32]string{1: addr}); err != nil {
		t.Fatal(err)
	}
	p := m.Get(tp)
	m.mu.Lock()
	fe := m.fetchers[1]
	m.mu.Unlock()
	fe.mu.Lock()
	st := fe.parts[tp]
	fe.mu.Unlock()
	// The fetcher first reconciles the log with the leader (which knows no
	// epoch: truncate to the high watermark, 0); let it finish, so it does
	// not cut the records handed to it below.
	deadline := time.Now().Add(10 * time.Second)
	for {
		fe.mu.Lock()
		reconciled := !st.truncate
		fe.mu.Unlock()
		if reconciled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the fetcher did not reconcile the log with the leader")
		}
		time.Sleep(5 * time.Millisecond)
	}
	answer := func(base int64) kmsg.FetchResponseTopicPartition {
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.RecordBatches = testBatchAt(base, 5, 5)
		rp.HighWatermark = base + 5
		return rp
	}
	fe.handlePartition(st, answer(0))
	if got := p.Log().LogEndOffset(); got != 5 {
		t.Fatalf("a follower's fetched records were not appended: log end %d", got)
	}
	p.makeLeader(State{Leader: 2, LeaderEpoch: 6, ISR: []int32{1, 2}, Replicas: []int32{1, 2}})
	fe.handlePartition(st, answer(5))
	if got := p.Log().LogEndOffset(); got != 5 {
		t.Fatalf("the leader of epoch 6 appended records fetched from the old leader: log end %d", got)
	}
	if e, end := p.Log().EndOffsetForEpoch(5); e != 5 || end != 5 {
		t.Fatalf("epoch 5 ends at (%d, %d), want (5, 5)", e, end)
	}
	// The same holds for a follower of another leader, or of a later epoch.
	p.makeFollower(State{Leader: 3, LeaderEpoch: 7, ISR: []int32{2, 3}, Replicas: []int32{2, 3}})
	fe.handlePartition(st, answer(5))
	if got := p.Log().LogEndOffset(); got != 5 {
		t.Fatalf("a follower of leader 3 appended records fetched from leader 1: log end %d", got)
	}
}

// A truncation decided on an old leader's word does not touch a partition that
// leads meanwhile.
func TestFetchedTruncationNeverReachesALeader(t *testing.T) {
	p := testPartition(t)
	p.makeFollower(State{Leader: 1, LeaderEpoch: 5, ISR: []int32{1, 2}, Replicas: []int32{1, 2}})
	if err := p.appendFetched(1, 5, testBatchAt(0, 5, 10), 10, 0); err != nil {
		t.Fatal(err)
	}
	p.makeLeader(State{Leader: 2, LeaderEpoch: 6, ISR: []int32{2}, Replicas: []int32{1, 2}})
	if err := p.truncateFetched(1, 5, 3); !errors.Is(err, errNotFollowing) {
		t.Fatalf("truncation on the old leader's word: %v", err)
	}
	if err := p.restartFetched(1, 5, 100); !errors.Is(err, errNotFollowing) {
		t.Fatalf("log reset on the old leader's word: %v", err)
	}
	if got := p.Log().LogEndOffset(); got != 10 {
		t.Fatalf("log end %d, want 10", got)
	}
}

// Invariant: OffsetForLeaderEpoch answers from the epoch cache, as Kafka does:
// the end of epoch E is where the next larger epoch starts, or the log end for
// the latest. A new leader whose high watermark still lags (it learns the
// high watermark one fetch after its predecessor) must not cut the answer down
// to it: a consumer that read up to the predecessor's high watermark would be
// told of data loss and read again.
func TestLastOffsetForLeaderEpochIgnoresHighWatermark(t *testing.T) {
	p := testPartition(t)
	p.makeFollower(State{Leader: 1, LeaderEpoch: 1, ISR: []int32{1, 2, 3}, Replicas: []int32{1, 2, 3}})
	// The old leader committed 20 records; this follower holds them but has
	// learnt a high watermark of 12 only.
	if err := p.appendFetched(1, 1, testBatchAt(0, 1, 20), 12, 0); err != nil {
		t.Fatal(err)
	}
	p.makeLeader(State{Leader: 2, LeaderEpoch: 2, ISR: []int32{2, 3}, Replicas: []int32{1, 2, 3}})
	if _, err := p.AppendAsLeader(testBatch(5), 1); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != 12 {
		t.Fatalf("high watermark %d: the test needs it to lag at 12", hw)
	}
	for _, tc := range []struct {
		current, ask, epoch int32
		end                 int64
	}{
		{2, 1, 1, 20},  // epoch 1 ends where epoch 2 starts, above the high watermark
		{2, 2, 2, 25},  // the latest epoch ends at the log end
		{-1, 1, 1, 20}, // no current epoch given: not checked
	} {
		e, end, err := p.LastOffsetForLeaderEpoch(tc.current, tc.ask)
		if err != nil || e != tc.epoch || end != tc.end {
			t.Errorf("LastOffsetForLeaderEpoch(current %d, epoch %d) = (%d, %d, %v), want (%d, %d)", tc.current, tc.ask, e, end, err, tc.epoch, tc.end)
		}
	}
	if _, _, err := p.LastOffsetForLeaderEpoch(1, 1); !errors.Is(err, kerr.FencedLeaderEpoch) {
		t.Errorf("current epoch behind the leader: %v, want FENCED_LEADER_EPOCH", err)
	}
	if _, _, err := p.LastOffsetForLeaderEpoch(3, 1); !errors.Is(err, kerr.UnknownLeaderEpoch) {
		t.Errorf("current epoch ahead of the leader: %v, want UNKNOWN_LEADER_EPOCH", err)
	}
	p.makeFollower(State{Leader: 3, LeaderEpoch: 3, ISR: []int32{2, 3}, Replicas: []int32{1, 2, 3}})
	if _, _, err := p.LastOffsetForLeaderEpoch(-1, 1); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Errorf("a follower answered: %v, want NOT_LEADER_FOR_PARTITION", err)
	}
}

// Invariant: every record below a leader's high watermark is on every ISR
// member the controller could elect. A new leader does not trust what its
// followers held in an earlier epoch: the high watermark moves only once each
// ISR member has fetched from it in this epoch.
func TestNewLeaderHighWatermarkWaitsForEveryIsrMember(t *testing.T) {
	p := testPartition(t)
	p.makeLeader(State{Leader: 1, LeaderEpoch: 1, ISR: []int32{1, 2, 3}, Replicas: []int32{1, 2, 3}})
	if _, err := p.AppendAsLeader(testBatch(10), 1); err != nil {
		t.Fatal(err)
	}
	for _, r := range []int32{2, 3} {
		if _, _, _, err := p.ReadForFollower(r, 10, 1<<20, 1, true); err != nil {
			t.Fatal(err)
		}
	}
	if hw := p.HighWatermark(); hw != 10 {
		t.Fatalf("high watermark %d, want 10", hw)
	}
	if _, err := p.AppendAsLeader(testBatch(5), 1); err != nil {
		t.Fatal(err)
	}
	// A new epoch (say the ISR changed through the controller): followers
	// count again from their first fetch in it.
	p.makeLeader(State{Leader: 1, LeaderEpoch: 2, ISR: []int32{1, 2, 3}, Replicas: []int32{1, 2, 3}})
	if _, _, _, err := p.ReadForFollower(2, 15, 1<<20, 2, true); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != 10 {
		t.Fatalf("high watermark %d before ISR member 3 fetched in the new epoch, want 10", hw)
	}
	if _, _, _, err := p.ReadForFollower(3, 15, 1<<20, 2, true); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != 15 {
		t.Fatalf("high watermark %d, want 15", hw)
	}
}

// While an ISR shrink is being written the removed member still holds the
// high watermark back (it is still in the ISR the controller reads until the
// write lands); once written, it no longer does.
func TestHighWatermarkWaitsDuringShrink(t *testing.T) {
	p := testPartition(t)
	p.SetLimits(1, 0)
	p.makeLeader(State{Leader: 1, LeaderEpoch: 1, ISR: []int32{1, 2}, Replicas: []int32{1, 2}})
	if _, err := p.AppendAsLeader(testBatch(5), 1); err != nil {
		t.Fatal(err)
	}
	st := p.shrinkCandidate()
	if st == nil || len(st.ISR) != 1 {
		t.Fatalf("shrink candidate %+v, want ISR [1]", st)
	}
	p.mu.Lock()
	p.maybeAdvanceHWLocked()
	p.mu.Unlock()
	if hw := p.HighWatermark(); hw != 0 {
		t.Fatalf("high watermark %d while the shrink is written, want 0", hw)
	}
	st.ZkVersion = 1
	p.isrWritten(*st, true)
	if hw := p.HighWatermark(); hw != 5 {
		t.Fatalf("high watermark %d after the shrink, want 5", hw)
	}
}

// A follower's question about an epoch the leader has not taken yet waits for
// the LeaderAndIsr that brings it, an event: it returns as soon as that is
// applied, long before its own deadline.
func TestAwaitLeaderEpochWokenByLeaderAndIsr(t *testing.T) {
	m := testManager(t, 1)
	tp := TP{"t", 0}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan struct{})
	go func() {
		m.AwaitLeaderEpoch(ctx, tp, 3)
		close(done)
	}()
	if _, err := m.BecomeLeaderOrFollower(0, []LeaderUpdate{{TP: tp, State: State{Leader: 1, LeaderEpoch: 2, ISR: []int32{1}, Replicas: []int32{1}}}}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		t.Fatal("returned at epoch 2, before epoch 3 was taken")
	default:
	}
	if _, err := m.BecomeLeaderOrFollower(0, []LeaderUpdate{{TP: tp, State: State{Leader: 1, LeaderEpoch: 3, ISR: []int32{1}, Replicas: []int32{1}}}}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the wait to end once epoch 3 is applied", func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	})
	if ctx.Err() != nil {
		t.Fatal("the wait ended by its deadline, not by the LeaderAndIsr")
	}
}

// failingIsr fails every write, as a store cut off mid-request does: the
// caller cannot tell whether the write landed.
type failingIsr struct{ writes int }

func (f *failingIsr) WriteIsr(ctx context.Context, tp TP, st State) (int32, error) {
	f.writes++
	return 0, errors.New("connection lost; outcome unknown")
}

// Invariant: every record below the high watermark is on every ISR member
// the controller could elect. An ISR expansion whose write failed may still
// have landed (or land later), making the follower electable: until a later
// write settles it, the high watermark keeps waiting for that follower.
func TestUnknownExpansionOutcomeKeepsFollowerInHighWatermark(t *testing.T) {
	isr := &failingIsr{}
	m := NewManager(Config{BrokerID: 1, LogDirs: []string{t.TempDir()}, Isr: isr,
		TopicSettings: func(string) Settings { return Settings{Log: klog.DefaultConfig(), MinISR: 1} }})
	defer m.Shutdown()
	tp := TP{"t", 0}
	if err := m.apply(LeaderUpdate{TP: tp, State: State{Leader: 1, LeaderEpoch: 1, ISR: []int32{1}, Replicas: []int32{1, 2}}}, nil); err != nil {
		t.Fatal(err)
	}
	p := m.Get(tp)
	if _, err := p.AppendAsLeader(testBatch(5), 1); err != nil {
		t.Fatal(err)
	}
	_, _, expand, err := p.ReadForFollower(2, 5, 1<<20, 1, true)
	if err != nil || expand == nil {
		t.Fatalf("no expansion of a caught-up follower (%v)", err)
	}
	m.ExpandIsr(p, *expand)
	if isr.writes != 1 {
		t.Fatalf("%d ISR writes", isr.writes)
	}
	if _, err := p.AppendAsLeader(testBatch(5), 1); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != 5 {
		t.Fatalf("high watermark %d after a failed expansion of follower 2 (at 5), want 5: records above it may be missing from an ISR member", hw)
	}
	// The follower fetches on: the expansion is tried again, and the high
	// watermark follows it meanwhile.
	_, _, expand, _ = p.ReadForFollower(2, 10, 1<<20, 1, true)
	if expand == nil {
		t.Fatal("the expansion is not tried again")
	}
	if hw := p.HighWatermark(); hw != 10 {
		t.Fatalf("high watermark %d, want 10", hw)
	}
}

// A follower whose expansion is unsettled and that stops fetching is settled
// by writing the ISR without it; once that write lands, the high watermark no
// longer waits for it.
func TestUnsettledLaggingFollowerSettledByIsrWrite(t *testing.T) {
	p := testPartition(t)
	p.SetLimits(1, 0)
	p.makeLeader(State{Leader: 1, LeaderEpoch: 1, ISR: []int32{1}, Replicas: []int32{1, 2}})
	if _, err := p.AppendAsLeader(testBatch(5), 1); err != nil {
		t.Fatal(err)
	}
	_, _, expand, _ := p.ReadForFollower(2, 5, 1<<20, 1, true)
	if expand == nil {
		t.Fatal("no expansion")
	}
	p.isrWritten(*expand, false)
	if _, err := p.AppendAsLeader(testBatch(5), 1); err != nil {
		t.Fatal(err)
	}
	st := p.shrinkCandidate()
	if st == nil || len(st.ISR) != 1 || st.ISR[0] != 1 {
		t.Fatalf("settling write %+v, want ISR [1]", st)
	}
	if hw := p.HighWatermark(); hw != 5 {
		t.Fatalf("high watermark %d before the settling write landed, want 5", hw)
	}
	st.ZkVersion = 1
	p.isrWritten(*st, true)
	if hw := p.HighWatermark(); hw != 10 {
		t.Fatalf("high watermark %d after the settling write, want 10", hw)
	}
}

// Kafka's lag rule: a follower that fetched up to the log end stays in the
// ISR while the log does not grow, however long ago that fetch was (idle
// partitions must not shrink because a fetch of thousands of partitions is
// slow); once the log grows and the follower does not catch up within
// replica.lag.time.max.ms, it leaves. A follower not heard from in this
// epoch lags from the epoch's start.
func TestCaughtUpFollowerStaysWhileLogIdle(t *testing.T) {
	p := testPartition(t)
	now := time.Unix(1000, 0)
	p.now = func() time.Time { return now }
	p.SetLimits(1, 5*time.Second)
	p.makeLeader(State{Leader: 1, LeaderEpoch: 1, ISR: []int32{1, 2, 3}, Replicas: []int32{1, 2, 3}})
	if _, _, _, err := p.ReadForFollower(2, 0, 1<<20, 1, true); err != nil {
		t.Fatal(err)
	}
	now = now.Add(4 * time.Second)
	if st := p.shrinkCandidate(); st != nil {
		t.Fatalf("shrink %v within replica.lag.time.max.ms", st.ISR)
	}
	now = now.Add(2 * time.Second)
	st := p.shrinkCandidate()
	if st == nil || !slices.Equal(st.ISR, []int32{1, 2}) {
		t.Fatalf("shrink %+v, want ISR [1 2]: 3 never fetched in this epoch", st)
	}
	p.isrWritten(*st, true)
	now = now.Add(time.Hour)
	if st := p.shrinkCandidate(); st != nil {
		t.Fatalf("shrink %v of a follower holding the log end of an idle log", st.ISR)
	}
	if _, err := p.AppendAsLeader(testBatch(3), 1); err != nil {
		t.Fatal(err)
	}
	if st := p.shrinkCandidate(); st == nil || !slices.Equal(st.ISR, []int32{1}) {
		t.Fatalf("shrink %+v after an append the follower has not fetched for an hour, want ISR [1]", st)
	}
}

// landingIsr is a store whose first ISR write lands and then fails, as a
// connection cut after the write does: the leader cannot tell it landed.
// Writes are conditional on the znode version, as ZooKeeper's are.
type landingIsr struct {
	mu     sync.Mutex
	st     State
	writes int
}

func (f *landingIsr) WriteIsr(ctx context.Context, tp TP, st State) (int32, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	if st.ZkVersion != f.st.ZkVersion {
		return 0, errors.New("bad version")
	}
	st.ZkVersion++
	f.st = st
	if f.writes == 1 {
		return 0, errors.New("connection lost after the write; outcome unknown")
	}
	return st.ZkVersion, nil
}

func (f *landingIsr) ReadIsr(ctx context.Context, tp TP) (State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st, nil
}

func (f *landingIsr) stored() (State, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st, f.writes
}

// Invariant: the leader's ISR converges on the store's. A shrink that landed
// although its write failed (and its read back failed too) left the store's
// ISR narrower than the leader's; the follower caught up again, so nothing
// more was written, and the store kept naming the leader alone until it died
// and the partition went offline (the 10,000-partition failover bench, two
// partitions). The leader reads the state back and re-expands the ISR.
func TestLandedShrinkOfUnknownOutcomeIsSettled(t *testing.T) {
	tp := TP{"t", 0}
	initial := State{Leader: 1, LeaderEpoch: 1, ISR: []int32{1, 2}, Replicas: []int32{1, 2}}
	isr := &landingIsr{st: initial}
	m := NewManager(Config{BrokerID: 1, LogDirs: []string{t.TempDir()}, Isr: isr, ReplicaLagMax: time.Millisecond,
		Logger:        slog.New(slog.DiscardHandler),
		TopicSettings: func(string) Settings { return Settings{Log: klog.DefaultConfig(), MinISR: 1} }})
	defer m.Shutdown()
	if err := m.apply(LeaderUpdate{TP: tp, State: initial}, nil); err != nil {
		t.Fatal(err)
	}
	p := m.Get(tp)
	if _, err := p.AppendAsLeader(testBatch(5), 1); err != nil {
		t.Fatal(err)
	}
	// Follower 2 does not fetch: it lags, and the shrink lands unknown.
	deadline := time.Now().Add(10 * time.Second)
	for _, n := isr.stored(); n == 0; _, n = isr.stored() {
		if time.Now().After(deadline) {
			t.Fatal("no ISR shrink was written")
		}
		m.shrinkIsrs()
		time.Sleep(5 * time.Millisecond)
	}
	if st, _ := isr.stored(); !slices.Equal(st.ISR, []int32{1}) {
		t.Fatalf("store ISR %v after the shrink, want [1]", st.ISR)
	}
	// The follower catches up and keeps fetching at the log end.
	deadline = time.Now().Add(10 * time.Second)
	for {
		_, _, expand, err := p.ReadForFollower(2, p.Log().LogEndOffset(), 1<<20, 1, true)
		if err != nil {
			t.Fatal(err)
		}
		if expand != nil {
			m.ExpandIsr(p, *expand)
		}
		m.shrinkIsrs()
		st, _ := isr.stored()
		if slices.Equal(st.ISR, []int32{1, 2}) && slices.Equal(p.State().ISR, []int32{1, 2}) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("store ISR %v while the leader's is %v: the landed shrink was never learned", st.ISR, p.State().ISR)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
