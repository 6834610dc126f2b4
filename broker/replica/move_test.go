package replica

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	klog "github.com/ktoolhq/ktool/broker/log"
	"github.com/ktoolhq/ktool/internal/batch"
)

// moveManager is a manager over dirs with small segments (a move copies
// several) and the move rate rate() (nil: unlimited).
func moveManager(t *testing.T, dirs []string, rate func() int64) *Manager {
	t.Helper()
	cfg := klog.DefaultConfig()
	cfg.SegmentBytes = 16 << 10
	cfg.IndexIntervalBytes = 512
	m := NewManager(Config{BrokerID: 1, LogDirs: dirs, Isr: &fakeIsr{}, MoveRate: rate,
		TopicSettings: func(string) Settings { return Settings{Log: cfg, MinISR: 1} }})
	if err := m.Load(); err != nil {
		t.Fatal(err)
	}
	return m
}

// readAll returns every batch of l from its start, in order.
func readAll(t *testing.T, l *klog.Log) [][]byte {
	t.Helper()
	var out [][]byte
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		r, err := l.Read(off, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		buf := make([]byte, r.Len)
		if _, err := r.File.ReadAt(buf, r.Pos); err != nil {
			t.Fatal(err)
		}
		r.Release()
		for pos := 0; pos < len(buf); {
			h, err := batch.ParseHeader(buf[pos:])
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, buf[pos:pos+int(h.Size())])
			pos += int(h.Size())
			off = h.LastOffset() + 1
		}
	}
	return out
}

// logView is what must not change when a log moves.
type logView struct {
	start, end, hw int64
	epoch          int32
	epochStart     int64
	epochEnds      []int64
	times          []int64
	batches        [][]byte
}

func viewOf(t *testing.T, l *klog.Log) logView {
	t.Helper()
	v := logView{start: l.LogStartOffset(), end: l.LogEndOffset(), hw: l.HighWatermark(), batches: readAll(t, l)}
	v.epoch, v.epochStart = l.LatestEpochStart()
	for e := int32(0); e <= v.epoch+1; e++ {
		_, end := l.EndOffsetForEpoch(e)
		v.epochEnds = append(v.epochEnds, end)
	}
	for _, b := range v.batches {
		h, _ := batch.ParseHeader(b)
		off, _, _, _ := l.OffsetForTimestamp(h.MaxTimestamp)
		v.times = append(v.times, off)
	}
	return v
}

func sameView(t *testing.T, what string, a, b logView) {
	t.Helper()
	if a.start != b.start || a.end != b.end || a.hw != b.hw || a.epoch != b.epoch || a.epochStart != b.epochStart {
		t.Fatalf("%s: log start/end/hw/epoch/epoch start %d/%d/%d/%d/%d, want %d/%d/%d/%d/%d", what,
			b.start, b.end, b.hw, b.epoch, b.epochStart, a.start, a.end, a.hw, a.epoch, a.epochStart)
	}
	if fmt.Sprint(a.epochEnds) != fmt.Sprint(b.epochEnds) {
		t.Fatalf("%s: epoch ends %v, want %v", what, b.epochEnds, a.epochEnds)
	}
	if fmt.Sprint(a.times) != fmt.Sprint(b.times) {
		t.Fatalf("%s: offsets by timestamp %v, want %v", what, b.times, a.times)
	}
	if len(a.batches) != len(b.batches) {
		t.Fatalf("%s: %d batches, want %d", what, len(b.batches), len(a.batches))
	}
	for i := range a.batches {
		if !bytes.Equal(a.batches[i], b.batches[i]) {
			t.Fatalf("%s: batch %d differs", what, i)
		}
	}
}

func waitMoved(t *testing.T, m *Manager, p *Partition, dir string) {
	t.Helper()
	waitFor(t, "the move to "+dir, func() bool { return p.Dir() == filepath.Clean(dir) && len(m.Moves()) == 0 })
}

// TestMoveKeepsTheLog moves a quiet log with several segments, two leader
// epochs (the last one without records), a log start above its first
// segment and a high watermark below its end: offsets, batches, epochs,
// timestamps lookups, log start and high watermark are the same after the
// swap and after a restart, and only the target dir holds the partition.
func TestMoveKeepsTheLog(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	m := moveManager(t, dirs, nil)
	tp := TP{"mv", 0}
	if err := lead(t, m, tp); err != nil {
		t.Fatal(err)
	}
	p := m.Get(tp)
	for i := range 300 {
		if _, err := p.AppendAsLeader(oneRecordBatch(fmt.Appendf(nil, "v%03d-%s", i, strings.Repeat("x", 200))), 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Log().DeleteRecordsBefore(40); err != nil {
		t.Fatal(err)
	}
	if _, err := m.BecomeLeaderOrFollower(1, []LeaderUpdate{{TP: tp,
		State: State{Leader: 1, LeaderEpoch: 3, ISR: []int32{1}, Replicas: []int32{1}}}}, nil); err != nil {
		t.Fatal(err)
	}
	p.Log().SetHighWatermark(250)
	before := viewOf(t, p.Log())
	if err := m.AlterLogDir(tp, dirs[1]+"/", true); err != nil {
		t.Fatal(err)
	}
	waitMoved(t, m, p, dirs[1])
	sameView(t, "after the move", before, viewOf(t, p.Log()))
	if _, err := os.Stat(filepath.Join(dirs[0], tp.String())); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the old log is still there: %v", err)
	}
	if ents, _ := os.ReadDir(dirs[1]); len(ents) != 1 || ents[0].Name() != tp.String() {
		t.Fatalf("target dir holds %v, want only %s", ents, tp)
	}
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}
	m = moveManager(t, dirs, nil)
	defer m.Shutdown()
	p = m.Get(tp)
	if p == nil || p.Dir() != filepath.Clean(dirs[1]) {
		t.Fatalf("after a restart the partition is not in %s", dirs[1])
	}
	// A restart forgets a leader epoch without records (it starts at the log
	// end), moved or not, as Kafka's truncateFromEnd at load does; the
	// leader takes a new epoch before it appends anyway.
	before.epoch, before.epochStart, before.epochEnds = 0, 40, before.epochEnds[:1]
	after := viewOf(t, p.Log())
	after.epochEnds = after.epochEnds[:1]
	sameView(t, "after a restart", before, after)
}

// TestMoveUnderAppends moves a partition while producers append: every
// acknowledged batch is in the moved log exactly once, at the offset it was
// acknowledged at, and the offsets have no gap.
func TestMoveUnderAppends(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	m := moveManager(t, dirs, func() int64 { return 2 << 20 })
	defer m.Shutdown()
	tp := TP{"mv", 1}
	if err := lead(t, m, tp); err != nil {
		t.Fatal(err)
	}
	p := m.Get(tp)
	for i := range 500 {
		if _, err := p.AppendAsLeader(oneRecordBatch(fmt.Appendf(nil, "pre-%d-%s", i, strings.Repeat("y", 300))), 1); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu    sync.Mutex
		acked = map[int64]string{}
		stop  atomic.Bool
		wg    sync.WaitGroup
	)
	defer func() { stop.Store(true); wg.Wait() }()
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Paced below the move rate, so that the copy catches up.
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for i := 0; !stop.Load(); i++ {
				<-tick.C
				v := fmt.Sprintf("w%d-%d", w, i)
				res, err := p.AppendAsLeader(oneRecordBatch([]byte(v)), 1)
				if err != nil {
					t.Errorf("append during the move: %v", err)
					return
				}
				mu.Lock()
				acked[res.BaseOffset] = v
				mu.Unlock()
			}
		}()
	}
	if err := m.AlterLogDir(tp, dirs[1], true); err != nil {
		t.Fatal(err)
	}
	sawFuture := false
	waitFor(t, "the move under appends", func() bool {
		if len(m.Moves()) > 0 {
			sawFuture = true
		}
		return p.Dir() == filepath.Clean(dirs[1]) && len(m.Moves()) == 0
	})
	// Appends go on after the swap, into the new log.
	mu.Lock()
	n := len(acked)
	mu.Unlock()
	waitFor(t, "appends after the swap", func() bool { mu.Lock(); defer mu.Unlock(); return len(acked) > n+100 })
	stop.Store(true)
	wg.Wait()
	if !sawFuture {
		t.Log("the move finished before Moves was first read")
	}
	got := map[int64]string{}
	next := int64(0)
	for _, b := range readAll(t, p.Log()) {
		h, _ := batch.ParseHeader(b)
		if h.BaseOffset != next {
			t.Fatalf("batch at %d, want %d: a gap or a duplicate", h.BaseOffset, next)
		}
		next = h.LastOffset() + 1
		got[h.BaseOffset] = string(b)
	}
	if next != p.Log().LogEndOffset() {
		t.Fatalf("batches end at %d, log end %d", next, p.Log().LogEndOffset())
	}
	for off, v := range acked {
		if !strings.Contains(got[off], v) {
			t.Fatalf("acknowledged batch %q at offset %d is not in the moved log", v, off)
		}
	}
	t.Logf("%d batches, %d acknowledged during the move", len(got), len(acked))
}

// TestMoveInterrupted: a broker stopped during the copy (the future log is
// left on disk) starts with its current log intact and the future log
// removed; one stopped after the copy was complete and renamed -swap, but
// before the current log was renamed, finishes the swap at start.
func TestMoveInterrupted(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	m := moveManager(t, dirs, func() int64 { return 64 << 10 })
	tp := TP{"mv", 2}
	if err := lead(t, m, tp); err != nil {
		t.Fatal(err)
	}
	p := m.Get(tp)
	for i := range 2000 {
		if _, err := p.AppendAsLeader(oneRecordBatch(fmt.Appendf(nil, "v%d-%s", i, strings.Repeat("z", 200))), 1); err != nil {
			t.Fatal(err)
		}
	}
	p.Log().SetHighWatermark(p.Log().LogEndOffset())
	before := viewOf(t, p.Log())
	if err := m.AlterLogDir(tp, dirs[1], true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a partial copy", func() bool { mv := m.Moves(); return len(mv) == 1 && mv[0].Size > 0 })
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}
	futures, _ := filepath.Glob(filepath.Join(dirs[1], tp.String()+".*"+futureSuffix))
	if len(futures) != 1 {
		t.Fatalf("future logs after the stop: %v, want one", futures)
	}
	m = moveManager(t, dirs, nil)
	p = m.Get(tp)
	if p == nil || p.Dir() != filepath.Clean(dirs[0]) {
		t.Fatal("the partition is not in its first dir after an interrupted copy")
	}
	sameView(t, "after an interrupted copy", before, viewOf(t, p.Log()))
	if ents, _ := os.ReadDir(dirs[1]); len(ents) != 0 {
		t.Fatalf("the future log was not removed: %v", ents)
	}
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}
	// A complete copy renamed -swap: the state between the swap's first and
	// second rename.
	swap := filepath.Join(dirs[1], tp.String()+".0123456789abcdef0123456789abcdef"+swapSuffix)
	if out, err := exec.Command("cp", "-a", filepath.Join(dirs[0], tp.String()), swap).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	m = moveManager(t, dirs, nil)
	defer m.Shutdown()
	p = m.Get(tp)
	if p == nil || p.Dir() != filepath.Clean(dirs[1]) {
		t.Fatal("the interrupted swap was not finished at start")
	}
	sameView(t, "after a finished swap", before, viewOf(t, p.Log()))
	if ents, _ := os.ReadDir(dirs[0]); len(ents) != 0 {
		t.Fatalf("the old log was not removed: %v", ents)
	}
}

// TestMoveCancelled: StopReplica with delete (topic deletion) during a copy
// ends it and removes the future log with the partition; a request for the
// current dir cancels a move; a leader change does not stop one.
func TestMoveCancelled(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	var rate atomic.Int64
	rate.Store(32 << 10)
	m := moveManager(t, dirs, rate.Load)
	defer m.Shutdown()
	tps := []TP{{"mv", 3}, {"mv", 4}}
	for _, tp := range tps {
		if err := lead(t, m, tp); err != nil {
			t.Fatal(err)
		}
		for i := range 1000 {
			if _, err := m.Get(tp).AppendAsLeader(oneRecordBatch(fmt.Appendf(nil, "v%d-%s", i, strings.Repeat("c", 200))), 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	// dirs[0] holds mv-3, dirs[1] mv-4.
	from := map[TP]string{}
	for _, tp := range tps {
		from[tp] = m.Get(tp).Dir()
	}
	to := func(tp TP) string {
		if from[tp] == filepath.Clean(dirs[0]) {
			return dirs[1]
		}
		return dirs[0]
	}
	for _, tp := range tps {
		if err := m.AlterLogDir(tp, to(tp), true); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "two copies", func() bool { return len(m.Moves()) == 2 })
	if err := m.StopReplica(1, tps[0], true); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(to(tps[0]), tps[0].String()+"*")); len(left) != 0 {
		t.Fatalf("deleting the partition left %v", left)
	}
	if _, err := m.BecomeLeaderOrFollower(1, []LeaderUpdate{{TP: tps[1],
		State: State{Leader: 1, LeaderEpoch: 5, ISR: []int32{1}, Replicas: []int32{1}}}}, nil); err != nil {
		t.Fatal(err)
	}
	if mv := m.Moves(); len(mv) != 1 || mv[0].TP != tps[1] {
		t.Fatalf("moves after a leader change: %+v", mv)
	}
	if err := m.AlterLogDir(tps[1], from[tps[1]], true); err != nil {
		t.Fatal(err)
	}
	if mv := m.Moves(); len(mv) != 0 {
		t.Fatalf("a request for the current dir left moves %+v", mv)
	}
	if left, _ := filepath.Glob(filepath.Join(to(tps[1]), "*"+futureSuffix)); len(left) != 0 {
		t.Fatalf("the cancelled move left %v", left)
	}
	// Moved again, unthrottled, it completes with the new epoch.
	rate.Store(0)
	if err := m.AlterLogDir(tps[1], to(tps[1]), true); err != nil {
		t.Fatal(err)
	}
	p := m.Get(tps[1])
	waitMoved(t, m, p, to(tps[1]))
	if e, start := p.Log().LatestEpochStart(); e != 5 || start != 1000 {
		t.Fatalf("latest epoch after the move %d at %d, want 5 at 1000", e, start)
	}
}

// TestAlterLogDirRefusals: the errors Kafka answers, and the preferred dir
// of a replica not hosted yet.
func TestAlterLogDirRefusals(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	m := moveManager(t, dirs, nil)
	defer m.Shutdown()
	cases := []struct {
		tp    TP
		dir   string
		known bool
		want  error
	}{
		{TP{"t", 0}, "/nowhere", true, kerr.LogDirNotFound},
		{TP{"t", 0}, "relative/dir", true, kerr.LogDirNotFound},
		{TP{"t", 0}, dirs[1] + "/../" + filepath.Base(dirs[1]) + "x", true, kerr.LogDirNotFound},
		{TP{"../../etc", 0}, dirs[1], true, kerr.InvalidTopicException},
		{TP{strings.Repeat("a", 249), 0}, dirs[1], true, kerr.InvalidTopicException},
		{TP{"t", -1}, dirs[1], true, kerr.InvalidTopicException},
		{TP{"t", 0}, dirs[1], false, kerr.UnknownTopicOrPartition},
		{TP{"t", 0}, dirs[1] + "/../" + filepath.Base(dirs[1]) + "/", true, kerr.ReplicaNotAvailable},
	}
	for _, c := range cases {
		if err := m.AlterLogDir(c.tp, c.dir, c.known); !errors.Is(err, c.want) {
			t.Errorf("AlterLogDir(%v, %q, %v) = %v, want %v", c.tp, c.dir, c.known, err, c.want)
		}
	}
	// Without the preference t-0 would go to dirs[0], the first of two empty dirs.
	if err := lead(t, m, TP{"t", 0}); err != nil {
		t.Fatal(err)
	}
	if d := m.Get(TP{"t", 0}).Dir(); d != filepath.Clean(dirs[1]) {
		t.Fatalf("t-0 was created in %s, not in the dir asked for before it was hosted", d)
	}
	if err := lead(t, m, TP{"t", 1}); err != nil {
		t.Fatal(err)
	}
	if d := m.Get(TP{"t", 1}).Dir(); d != filepath.Clean(dirs[0]) {
		t.Fatalf("t-1 was created in %s, want the least loaded %s", d, dirs[0])
	}
}

// TestPreferredDirForgotten: the dir chosen for a replica not hosted yet is
// forgotten when its topic is deleted (TopicsDeleted, for a broker that never
// hosted it) or its replica is stopped and deleted, so a topic created again
// under the name is placed by load, and nothing stays behind.
func TestPreferredDirForgotten(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	m := moveManager(t, dirs, nil)
	defer m.Shutdown()
	for _, tp := range []TP{{"deleted", 0}, {"deleted", 1}, {"stopped", 0}, {"kept", 0}} {
		if err := m.AlterLogDir(tp, dirs[1], true); !errors.Is(err, kerr.ReplicaNotAvailable) {
			t.Fatalf("AlterLogDir(%v) = %v", tp, err)
		}
	}
	m.TopicsDeleted([]string{"deleted", "never"})
	if err := m.StopReplica(1, TP{"stopped", 0}, true); err != nil {
		t.Fatal(err)
	}
	m.mu.RLock()
	left := len(m.preferred)
	m.mu.RUnlock()
	if left != 1 {
		t.Fatalf("%d preferred dirs kept, want only kept-0's", left)
	}
	// The forgotten ones go to the least loaded dir (the first on a tie);
	// kept-0 still goes to the dir asked for.
	for _, c := range []struct {
		tp  TP
		dir string
	}{{TP{"deleted", 0}, dirs[0]}, {TP{"stopped", 0}, dirs[1]}, {TP{"deleted", 1}, dirs[0]}, {TP{"kept", 0}, dirs[1]}} {
		if err := lead(t, m, c.tp); err != nil {
			t.Fatal(err)
		}
		if d := m.Get(c.tp).Dir(); d != filepath.Clean(c.dir) {
			t.Errorf("%v was created in %s, want %s", c.tp, d, c.dir)
		}
	}
}

// TestMoveQuota holds the copiers to the rate with a second's burst, and a
// rate lowered after a second used in full holds at once, as operators lower
// replica.alter.log.dirs.io.max.bytes.per.second when a move hurts.
func TestMoveQuota(t *testing.T) {
	var q moveQuota
	t0 := time.Unix(1000, 0)
	if d := q.b.Take(3000, 1000, t0); d != 2*time.Second {
		t.Fatalf("3 s worth owes %v, want 2s", d)
	}
	if d := q.b.Take(0, 1000, t0.Add(1500*time.Millisecond)); d != 500*time.Millisecond {
		t.Fatalf("owed %v after 1.5 s, want 500ms", d)
	}
	// Idle time banks at most one second's worth.
	if d := q.b.Take(1500, 1000, t0.Add(time.Hour)); d != 500*time.Millisecond {
		t.Fatalf("owed %v after an idle hour, want 500ms", d)
	}
	var l moveQuota
	l.b.Take(1<<30, 1<<30, t0)
	if d := l.b.Take(0, 1<<20, t0.Add(time.Millisecond)); d != 0 {
		t.Fatalf("a rate lowered to 1 MiB/s owes %v for the GiB copied within the old second", d)
	}
}
