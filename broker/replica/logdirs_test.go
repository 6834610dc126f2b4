package replica

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	klog "github.com/ktoolhq/ktool/broker/log"
	"github.com/ktoolhq/ktool/internal/batch"
	"github.com/ktoolhq/ktool/internal/disktest"
)

func jbodManager(t *testing.T, dirs []string, onFail func(string, int)) *Manager {
	t.Helper()
	m := NewManager(Config{BrokerID: 1, LogDirs: dirs, Isr: &fakeIsr{}, OnDirFailure: onFail,
		TopicSettings: func(string) Settings { return Settings{Log: klog.DefaultConfig(), MinISR: 1} }})
	if err := m.Load(); err != nil {
		t.Fatal(err)
	}
	return m
}

// lead makes broker 1 the only replica and leader of tp (a new partition).
func lead(t *testing.T, m *Manager, tp TP) error {
	t.Helper()
	errs, err := m.BecomeLeaderOrFollower(1, []LeaderUpdate{{TP: tp, IsNew: true,
		State: State{Leader: 1, LeaderEpoch: 0, ISR: []int32{1}, Replicas: []int32{1}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return errs[tp]
}

// TestPlacementLeastLoaded: each new partition goes to the dir holding the
// fewest (the first on a tie), and a restart finds each in its dir.
func TestPlacementLeastLoaded(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	m := jbodManager(t, dirs, nil)
	for i := range 7 {
		if err := lead(t, m, TP{"jbod", int32(i)}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]int{dirs[0]: 3, dirs[1]: 2, dirs[2]: 2}
	for _, d := range dirs {
		if n := len(m.PartitionsIn(d)); n != want[d] {
			t.Errorf("%s holds %d partitions, want %d", d, n, want[d])
		}
	}
	// Round robin over equal counts: partition i in dirs[i%3].
	for i := range 7 {
		if _, err := os.Stat(filepath.Join(dirs[i%3], TP{"jbod", int32(i)}.String())); err != nil {
			t.Errorf("partition %d: %v", i, err)
		}
	}
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}
	m = jbodManager(t, dirs, nil)
	defer m.Shutdown()
	for i := range 7 {
		p := m.Get(TP{"jbod", int32(i)})
		if p == nil || p.Dir() != filepath.Clean(dirs[i%3]) {
			t.Fatalf("partition %d not found in %s after a restart", i, dirs[i%3])
		}
	}
}

// TestDuplicatePartitionRefused: a partition with a log in two dirs stops the
// start, naming both, as Kafka refuses it.
func TestDuplicatePartitionRefused(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	for _, d := range dirs {
		if err := os.Mkdir(filepath.Join(d, "orders-3"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	m := NewManager(Config{BrokerID: 1, LogDirs: dirs, Isr: &fakeIsr{},
		TopicSettings: func(string) Settings { return Settings{Log: klog.DefaultConfig(), MinISR: 1} }})
	err := m.Load()
	if err == nil {
		m.Shutdown()
		t.Fatal("loaded a partition found in two log dirs")
	}
	for _, d := range dirs {
		if !strings.Contains(err.Error(), filepath.Join(d, "orders-3")) {
			t.Errorf("error does not name %s: %v", filepath.Join(d, "orders-3"), err)
		}
	}
}

func oneRecordBatch(value []byte) []byte {
	now := time.Now().UnixMilli()
	return batch.Encode(batch.Header{FirstTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1,
		BaseSequence: -1, NumRecords: 1}, batch.AppendRecord(nil, 0, 0, nil, value, nil))
}

// TestFullDirGoesOffline fills a 1 MiB tmpfs log dir: the append that does not
// fit answers KAFKA_STORAGE_ERROR at once (no stall), the dir goes offline
// with its partitions, the other dir keeps serving, and a restart after space
// is freed finds exactly the acknowledged batches, each whole.
func TestFullDirGoesOffline(t *testing.T) {
	small := disktest.Tmpfs(t, "1m")
	dirs := []string{t.TempDir(), small}
	var mu sync.Mutex
	var failed []string
	var online int
	m := jbodManager(t, dirs, func(dir string, n int) {
		mu.Lock()
		failed, online = append(failed, dir), n
		mu.Unlock()
	})
	a, b := TP{"full", 0}, TP{"full", 1} // a in dirs[0], b on the tmpfs
	for _, tp := range []TP{a, b} {
		if err := lead(t, m, tp); err != nil {
			t.Fatal(err)
		}
	}
	if m.Get(b).Dir() != small {
		t.Fatalf("partition %s is in %s, want the tmpfs %s", b, m.Get(b).Dir(), small)
	}
	value := make([]byte, 8<<10)
	acked := 0
	var appendErr error
	for i := 0; i < 1000; i++ {
		begin := time.Now()
		_, err := m.Get(b).AppendAsLeader(oneRecordBatch(value), 1)
		if d := time.Since(begin); d > 5*time.Second {
			t.Fatalf("an append to a full disk took %v", d)
		}
		if err != nil {
			appendErr = err
			break
		}
		acked++
	}
	if !errors.Is(appendErr, kerr.KafkaStorageError) {
		t.Fatalf("after %d appends of 8 KiB to a 1 MiB tmpfs: %v, want KAFKA_STORAGE_ERROR", acked, appendErr)
	}
	t.Logf("%d batches of 8 KiB appended, then: %v", acked, appendErr)
	deadline := time.Now().Add(10 * time.Second)
	for !m.Get(b).Offline() {
		if time.Now().After(deadline) {
			t.Fatal("the partition of the full dir did not go offline")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := m.Get(b).AppendAsLeader(oneRecordBatch(value), 1); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("append to the offline partition: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if _, err := m.Get(a).AppendAsLeader(oneRecordBatch(value), 1); err != nil {
		t.Fatalf("the partition of the healthy dir: %v", err)
	}
	ds := m.Dirs()
	if ds[0].Err != nil || ds[1].Err == nil {
		t.Fatalf("dir states %+v: want the tmpfs offline, the other online", ds)
	}
	mu.Lock()
	if len(failed) != 1 || failed[0] != small || online != 1 {
		t.Errorf("OnDirFailure calls %v (online %d), want one for %s with 1 online", failed, online, small)
	}
	mu.Unlock()
	if got := m.Partitions(); len(got) != 1 || got[0].ID != a.Partition {
		t.Errorf("online partitions %v, want only %s", got, a)
	}
	if err := lead(t, m, TP{"full", 2}); err != nil || m.Get(TP{"full", 2}).Dir() != filepath.Clean(dirs[0]) {
		t.Errorf("a new partition with one dir offline: %v, want it placed in %s", err, dirs[0])
	}
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}

	// Restarted on the still full disk, the dir is offline from the start and
	// the other serves.
	m = jbodManager(t, dirs, nil)
	if ds := m.Dirs(); ds[0].Err != nil || ds[1].Err == nil || m.Get(b) != nil || m.Get(a) == nil {
		t.Fatalf("restart on a full disk: dirs %+v, partition of the full dir loaded: %v", ds, m.Get(b) != nil)
	}
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}

	// Space is freed: the restart recovers the partition from its segments.
	disktest.Resize(t, small, "4m")
	m = jbodManager(t, dirs, nil)
	defer m.Shutdown()
	if ds := m.Dirs(); ds[1].Err != nil {
		t.Fatalf("the tmpfs is offline after the restart: %v", ds[1].Err)
	}
	p := m.Get(b)
	if p == nil {
		t.Fatal("the partition of the full dir is gone after the restart")
	}
	if leo := p.Log().LogEndOffset(); leo != int64(acked) {
		t.Fatalf("log end %d after recovery, want the %d acknowledged batches", leo, acked)
	}
	if err := lead(t, m, b); err != nil {
		t.Fatal(err)
	}
	for off := int64(0); off < int64(acked); off++ {
		r, _, err := p.ReadForConsumer(off, 1<<20, -1, true, false)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		data := make([]byte, r.Len)
		if _, err := r.File.ReadAt(data, r.Pos); err != nil {
			t.Fatal(err)
		}
		r.Release()
		hdrs, err := batch.ValidateLog(data)
		if err != nil || len(hdrs) == 0 || hdrs[0].BaseOffset != off {
			t.Fatalf("batch at %d: %v %+v", off, err, hdrs)
		}
	}
}
