package replica

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	klog "github.com/ktoolhq/ktool/broker/log"
	"github.com/ktoolhq/ktool/broker/quota"
	"github.com/ktoolhq/ktool/internal/batch"
)

// Moving a replica between the log dirs of this broker (KIP-113,
// AlterReplicaLogDirs). The move creates a future log in the target dir,
// <target>/<topic>-<partition>.<id>-future, and a copier fills it from the
// current log as a follower would: whole batches read from the current log
// are appended with their offsets, so the future log builds its own indexes,
// epoch cache, producer state and aborted-transaction index. It keeps copying
// what is appended meanwhile and, before each read, cuts the future log where
// it diverges from the current one (a follower's truncation, by the epochs of
// KIP-101), so whatever the current log does the future log is a prefix of it.
// When a read reaches the current log's end, the copier swaps the logs under
// the partition's lock, which every append and truncation takes: the last
// batches are appended, the current log is closed (after any retention or
// DeleteRecords in flight), its high watermark, log start and latest epoch
// are carried over, and the directories are renamed. Produce and fetch wait
// for the lock or, for a read that began on the old log, read the same
// offsets from the new one (readLog).
//
// The renames, each followed by an fsync of the parent directory, are: the
// future dir to <tp>.<id>-swap (complete, closed cleanly), the current dir to
// <tp>.<id>-delete, the swap dir to <tp>. At start (scanDirs) a -future dir
// is an unfinished copy and is removed (the current log is intact; a new
// request copies again), a -swap dir is a finished copy and the swap is
// completed, and a -delete dir is removed.
//
// A replica this broker does not host yet remembers the requested dir and
// is created there. StopReplica (and so topic deletion), a new target, a
// request for the current dir and a failure of either dir cancel a move;
// leadership changes do not (the copier follows truncations).

const (
	futureSuffix = "-future"
	swapSuffix   = "-swap"
	deleteSuffix = "-delete"
	// moveChunk is the most a copier reads at once.
	moveChunk = 1 << 20
	// maxDirName is the longest file name Linux file systems take.
	maxDirName = 255
)

// move is one replica moving to another log dir.
type move struct {
	p      *Partition
	tp     TP
	target string    // the log dir it moves to
	id     string    // the future dir's unique part
	dir    string    // the future log's directory
	log    *klog.Log // the future log, written by the copier alone
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	discard bool // the copier deletes the future log when it stops
}

// MoveStatus is a future log being filled, as DescribeLogDirs lists it.
type MoveStatus struct {
	TP  TP
	Dir string // the log dir it moves to
	// Size is the future log's bytes and OffsetLag how far its end is behind
	// the current log's end.
	Size, OffsetLag int64
}

// Moves lists the moves in progress, by topic and partition.
func (m *Manager) Moves() []MoveStatus {
	m.mu.RLock()
	out := make([]MoveStatus, 0, len(m.moves))
	for _, mv := range m.moves {
		out = append(out, MoveStatus{TP: mv.tp, Dir: mv.target, Size: mv.log.Size(),
			OffsetLag: max(0, mv.p.Log().LogEndOffset()-mv.log.LogEndOffset())})
	}
	m.mu.RUnlock()
	slices.SortFunc(out, func(a, b MoveStatus) int {
		return cmp.Or(cmp.Compare(a.TP.Topic, b.TP.Topic), cmp.Compare(a.TP.Partition, b.TP.Partition))
	})
	return out
}

// LogDirFor reports the configured log dir that dir names (compared as
// cleaned paths), or false.
func (m *Manager) LogDirFor(dir string) (string, bool) {
	if !filepath.IsAbs(dir) {
		return "", false
	}
	dir = filepath.Clean(dir)
	m.dirMu.Lock()
	defer m.dirMu.Unlock()
	if d := m.dirLocked(dir); d != nil {
		return d.path, true
	}
	return "", false
}

// AlterLogDir moves tp's replica to the log dir dir, as AlterReplicaLogDirs
// asks. known says the cluster has the partition: one this broker does not
// host yet is then created in dir when it comes (REPLICA_NOT_AVAILABLE now,
// as Kafka answers), and an unknown one is UNKNOWN_TOPIC_OR_PARTITION.
func (m *Manager) AlterLogDir(tp TP, dir string, known bool) error {
	root, ok := m.LogDirFor(dir)
	if !ok {
		return fmt.Errorf("%w: %q is not one of log.dirs", kerr.LogDirNotFound, dir)
	}
	name, err := futureName(tp, "0123456789abcdef0123456789abcdef")
	if err != nil {
		return err
	}
	if len(name) > maxDirName {
		return fmt.Errorf("%w: the topic name is too long for a future log dir name", kerr.InvalidTopicException)
	}
	m.changeMu.Lock()
	defer m.changeMu.Unlock()
	if m.dirFailed(root) {
		return fmt.Errorf("%w: log dir %s is offline", kerr.KafkaStorageError, root)
	}
	p := m.Get(tp)
	if p == nil {
		if !known {
			return kerr.UnknownTopicOrPartition
		}
		m.mu.Lock()
		m.preferred[tp] = root
		m.mu.Unlock()
		return kerr.ReplicaNotAvailable
	}
	if p.Offline() {
		return kerr.KafkaStorageError
	}
	m.mu.RLock()
	cur := m.moves[tp]
	m.mu.RUnlock()
	if cur != nil && cur.target == root {
		return nil
	}
	if cur != nil {
		m.stopMove(cur, true)
	}
	if p.Dir() == root {
		return nil
	}
	return m.startMove(p, tp, root)
}

// futureName is the future log's directory name for id.
func futureName(tp TP, id string) (string, error) {
	if _, err := partitionDir("/", tp); err != nil {
		return "", err
	}
	return tp.String() + "." + id + futureSuffix, nil
}

func (m *Manager) dirFailed(root string) bool {
	m.dirMu.Lock()
	defer m.dirMu.Unlock()
	d := m.dirLocked(root)
	return d == nil || d.err != nil
}

// startMove creates tp's future log in root and starts its copier; changeMu
// is held.
func (m *Manager) startMove(p *Partition, tp TP, root string) error {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	id := hex.EncodeToString(b[:])
	name, err := futureName(tp, id)
	if err != nil {
		return err
	}
	dir := filepath.Join(root, name)
	if filepath.Dir(dir) != root {
		return fmt.Errorf("%w: %s resolves outside %s", kerr.InvalidTopicException, name, root)
	}
	st := m.cfg.TopicSettings(tp.Topic)
	st.Log.FileCache = m.files
	l, err := klog.Open(dir, st.Log, m.logger.With("topic", tp.Topic, "partition", tp.Partition, "future", true))
	if err != nil {
		m.logger.Error("creating a future log", "partition", tp.String(), "dir", root, "err", err)
		if isStorageErr(err) || errors.Is(err, os.ErrPermission) {
			m.reportStorageError(root, err)
		}
		return fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
	}
	ctx, cancel := context.WithCancel(m.ctx)
	mv := &move{p: p, tp: tp, target: root, id: id, dir: dir, log: l, cancel: cancel, done: make(chan struct{})}
	m.mu.Lock()
	m.moves[tp] = mv
	m.mu.Unlock()
	m.logger.Info("moving replica to another log dir", "partition", tp.String(), "from", p.Dir(), "to", root, "bytes_per_second", m.moveRate())
	m.wg.Add(1)
	go m.runMove(ctx, mv)
	return nil
}

// stopMove cancels mv and waits for its copier to end; discard deletes the
// future log (otherwise it is only closed: a failed disk is not written, and
// at shutdown the next start removes it).
func (m *Manager) stopMove(mv *move, discard bool) {
	mv.mu.Lock()
	mv.discard = discard
	mv.mu.Unlock()
	mv.cancel()
	<-mv.done
}

// stopMoveOf cancels tp's move, if any, and deletes its future log.
func (m *Manager) stopMoveOf(tp TP) {
	m.mu.RLock()
	mv := m.moves[tp]
	m.mu.RUnlock()
	if mv != nil {
		m.stopMove(mv, true)
	}
}

// stopMovesIn cancels the moves from or to a failed log dir: the future log
// is deleted when it is on a healthy disk and only closed on the failed one.
func (m *Manager) stopMovesIn(dir string) {
	m.mu.RLock()
	var hit []*move
	for _, mv := range m.moves {
		if mv.target == dir || mv.p.Dir() == dir {
			hit = append(hit, mv)
		}
	}
	m.mu.RUnlock()
	for _, mv := range hit {
		m.stopMove(mv, mv.target != dir)
	}
}

// TopicsDeleted forgets the log dirs chosen for partitions of topics the
// cluster no longer has. StopReplica forgets those of the replicas it stops;
// this covers the partitions this broker was to host and never did, which no
// StopReplica reaches, so that a topic created again under the name is
// placed afresh and a broker with topic churn keeps no stale choices.
func (m *Manager) TopicsDeleted(topics []string) {
	gone := make(map[string]bool, len(topics))
	for _, t := range topics {
		gone[t] = true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for tp := range m.preferred {
		if gone[tp.Topic] {
			delete(m.preferred, tp)
		}
	}
}

// preferredDir takes the log dir a request chose for tp before it was
// hosted and places the partition in it; false when there is none or it
// is offline.
func (m *Manager) preferredDir(tp TP) (string, bool) {
	m.mu.Lock()
	root, ok := m.preferred[tp]
	delete(m.preferred, tp)
	m.mu.Unlock()
	if !ok {
		return "", false
	}
	m.dirMu.Lock()
	defer m.dirMu.Unlock()
	d := m.dirLocked(root)
	if d == nil || d.err != nil {
		return "", false
	}
	d.partitions++
	return root, true
}

func (m *Manager) runMove(ctx context.Context, mv *move) {
	defer m.wg.Done()
	defer close(mv.done)
	moved, err := m.copyAndSwap(ctx, mv)
	m.mu.Lock()
	if m.moves[mv.tp] == mv {
		delete(m.moves, mv.tp)
	}
	m.mu.Unlock()
	if moved != "" {
		if err := os.RemoveAll(moved); err != nil {
			m.logger.Warn("removing the moved replica's old log", "dir", moved, "err", err)
		}
		m.logger.Info("replica moved to another log dir", "partition", mv.tp.String(), "dir", mv.target)
		return
	}
	mv.mu.Lock()
	discard := mv.discard
	mv.mu.Unlock()
	if discard {
		if derr := mv.log.Delete(); derr != nil {
			m.logger.Warn("deleting a cancelled future log", "dir", mv.dir, "err", derr)
		}
	} else {
		mv.log.Abandon()
	}
	switch {
	case ctx.Err() != nil:
		m.logger.Info("replica move cancelled", "partition", mv.tp.String(), "to", mv.target)
	case err != nil:
		m.logger.Error("replica move failed", "partition", mv.tp.String(), "to", mv.target, "err", err)
	}
}

// copyAndSwap fills the future log until it catches up and swaps it in. It
// returns the old log's directory (renamed for deletion) once the swap is
// done.
func (m *Manager) copyAndSwap(ctx context.Context, mv *move) (string, error) {
	buf := make([]byte, moveChunk)
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		rate := m.moveRate()
		if err := m.moveQuota.wait(ctx, rate); err != nil {
			return "", err
		}
		chunk := moveChunk
		if rate < int64(chunk) {
			chunk = int(max(rate, batch.LogOverhead+64))
		}
		moved, n, err := m.copyStep(mv, buf[:chunk])
		if err != nil || moved != "" {
			return moved, err
		}
		m.moveQuota.take(rate, int64(n))
	}
}

func (m *Manager) moveRate() int64 {
	if m.cfg.MoveRate == nil {
		return math.MaxInt64
	}
	if r := m.cfg.MoveRate(); r > 0 {
		return r
	}
	return math.MaxInt64
}

// copyStep copies one chunk and, when it reaches the current log's end,
// swaps the logs. It returns the bytes copied.
func (m *Manager) copyStep(mv *move, buf []byte) (string, int, error) {
	p, fut := mv.p, mv.log
	p.mu.Lock()
	locked := true
	defer func() {
		if locked {
			p.mu.Unlock()
		}
	}()
	if p.deleted || p.offline {
		return "", 0, errors.New("the replica was removed")
	}
	cur := p.Log()
	if err := alignFuture(cur, fut); err != nil {
		return "", 0, m.futureErr(mv, err)
	}
	from := max(fut.LogEndOffset(), cur.LogStartOffset())
	end := cur.LogEndOffset()
	if from >= end {
		moved, err := m.swapLocked(mv, cur)
		return moved, 0, err
	}
	data, err := readRegion(p, cur, from, buf, end)
	if errors.Is(err, kerr.OffsetOutOfRange) {
		return "", 0, nil // retention moved the log start meanwhile: again
	}
	if err != nil {
		return "", 0, err
	}
	if len(data) == 0 {
		return "", 0, fmt.Errorf("no batch at offset %d of %s below its end %d", from, cur.Dir(), end)
	}
	last, err := lastOffset(data)
	if err != nil {
		return "", 0, err
	}
	if last+1 < end {
		// More to come: append without the lock, so producers are not held.
		p.mu.Unlock()
		locked = false
	}
	if err := appendFuture(fut, data); err != nil {
		return "", 0, m.futureErr(mv, err)
	}
	if locked {
		moved, err := m.swapLocked(mv, cur)
		return moved, len(data), err
	}
	return "", len(data), nil
}

// alignFuture makes the future log a prefix of the current one: it cuts it
// where their epochs part (as a follower truncates, KIP-101/279), and starts
// it over when the current log's start has passed its end (retention,
// DeleteRecords). p.mu is held, so the current log does not change meanwhile
// but for its start moving up.
func alignFuture(cur, fut *klog.Log) error {
	cut := min(fut.LogEndOffset(), cur.LogEndOffset())
	if fe := fut.LatestEpoch(); fe >= 0 {
		ce, cend := cur.EndOffsetForEpoch(fe)
		switch {
		case ce < 0:
			// The current log knows no epoch this old: the ends decide.
		case ce == fe:
			cut = min(cut, cend)
		default:
			// The future log has an epoch the current one does not: they
			// part where the current one's epoch ce ends, or where the future
			// one's does if that is sooner.
			_, fend := fut.EndOffsetForEpoch(ce)
			cut = min(cut, cend, max(fend, 0))
		}
	}
	if cut < fut.LogEndOffset() {
		return fut.TruncateTo(cut)
	}
	return nil
}

// readRegion reads whole batches of cur from offset into buf, at least one.
func readRegion(p *Partition, cur *klog.Log, offset int64, buf []byte, end int64) ([]byte, error) {
	r, err := cur.Read(offset, int32(len(buf)), end, true)
	if err != nil {
		return nil, p.checkStorage(err)
	}
	defer r.Release()
	if r.Len == 0 {
		return nil, nil
	}
	if r.Len > int64(len(buf)) {
		buf = make([]byte, r.Len)
	}
	n, err := r.File.ReadAt(buf[:r.Len], r.Pos)
	if int64(n) != r.Len {
		return nil, p.checkStorage(fmt.Errorf("reading %s for a move: %w", cur.Dir(), errors.Join(err, errors.New("short read"))))
	}
	return buf[:n], nil
}

// appendFuture appends batches copied from the current log. When the first
// one starts above the future log's end (the current log's start passed
// it), the future log starts over at that batch: what it held below is gone
// from the current log.
func appendFuture(fut *klog.Log, data []byte) error {
	if base := batch.PeekBaseOffset(data); base > fut.LogEndOffset() {
		if err := fut.TruncateFullyAndStartAt(base); err != nil {
			return err
		}
	}
	_, err := fut.AppendAsFollower(data)
	return err
}

// lastOffset is the last offset of the whole batches in data.
func lastOffset(data []byte) (int64, error) {
	last := int64(-1)
	for pos := 0; pos < len(data); {
		h, err := batch.ParseHeader(data[pos:])
		if err != nil {
			return 0, err
		}
		last = h.LastOffset()
		pos += int(h.Size())
	}
	return last, nil
}

// futureErr reports a failure of the future log's disk, which takes the
// target dir offline (the replica keeps serving from its current dir).
func (m *Manager) futureErr(mv *move, err error) error {
	if isStorageErr(err) {
		m.reportStorageError(mv.target, err)
	}
	return err
}

// swapLocked makes the caught-up future log the partition's log; p.mu is
// held. It returns the old log's directory, renamed for deletion.
func (m *Manager) swapLocked(mv *move, cur *klog.Log) (string, error) {
	p, fut := mv.p, mv.log
	src := p.Dir()
	if err := cur.Close(); err != nil {
		return "", p.checkStorage(err)
	}
	// Close waited for any retention or DeleteRecords in flight: the old
	// log's state is final now.
	fut.SetHighWatermark(cur.HighWatermark())
	if start := cur.LogStartOffset(); start > fut.LogStartOffset() {
		if _, err := fut.FollowLogStartOffset(start); err != nil {
			return "", m.swapFailed(mv, src, err)
		}
	}
	if err := fut.Close(); err != nil {
		return "", m.swapFailed(mv, mv.target, err)
	}
	base := filepath.Join(mv.target, mv.tp.String()+"."+mv.id)
	final, err := partitionDir(mv.target, mv.tp)
	if err != nil {
		return "", m.swapFailed(mv, mv.target, err)
	}
	old := filepath.Join(src, mv.tp.String()+"."+mv.id+deleteSuffix)
	steps := []struct{ from, to, root string }{
		{mv.dir, base + swapSuffix, mv.target},
		{cur.Dir(), old, src},
		{base + swapSuffix, final, mv.target},
	}
	for _, s := range steps {
		if err := renameSynced(s.from, s.to); err != nil {
			return "", m.swapFailed(mv, s.root, err)
		}
	}
	st := m.cfg.TopicSettings(mv.tp.Topic)
	st.Log.FileCache = m.files
	nl, err := klog.Open(final, st.Log, m.logger.With("topic", mv.tp.Topic, "partition", mv.tp.Partition))
	if err != nil {
		return "", m.swapFailed(mv, mv.target, err)
	}
	// A leader epoch that wrote nothing yet is not in the batches, and a
	// log loaded from disk drops it (it starts at the log end): carry it.
	if e, start := cur.LatestEpochStart(); e > nl.LatestEpoch() {
		nl.AssignEpochStart(e, start)
	}
	p.logp.Store(nl)
	p.setDir(mv.target)
	m.unplace(src)
	m.placeIn(mv.target)
	p.consumerW.wakeAll()
	p.replicaW.wakeAll()
	return old, nil
}

// swapFailed handles a swap that could not finish: the disk of root failed
// (or the names did); the partition goes offline with that dir and the next
// start completes or drops the swap from what is on disk.
func (m *Manager) swapFailed(mv *move, root string, err error) error {
	m.logger.Error("swapping a moved replica's log", "partition", mv.tp.String(), "dir", root, "err", err)
	m.reportStorageError(root, fmt.Errorf("%w: %v", kerr.KafkaStorageError, err))
	return err
}

func renameSynced(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return err
	}
	return syncDir(filepath.Dir(to))
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	return errors.Join(err, f.Close())
}

// placeIn counts a partition moved into root.
func (m *Manager) placeIn(root string) {
	m.dirMu.Lock()
	defer m.dirMu.Unlock()
	if d := m.dirLocked(root); d != nil {
		d.partitions++
	}
}

// moveDirName parses "<tp>.<id><suffix>", the name of a future, swap or
// deleted log directory.
func moveDirName(name, suffix string) (TP, string, bool) {
	rest, ok := strings.CutSuffix(name, suffix)
	if !ok {
		return TP{}, "", false
	}
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 || len(rest)-i-1 != 32 {
		return TP{}, "", false
	}
	if _, err := hex.DecodeString(rest[i+1:]); err != nil {
		return TP{}, "", false
	}
	tp, ok := ParseDirName(rest[:i])
	return tp, rest[i+1:], ok
}

// moveQuota is replica.alter.log.dirs.io.max.bytes.per.second, shared by
// the broker's copiers: a bucket holding at most one second of it.
type moveQuota struct{ b quota.SharedBucket }

// wait blocks until the bucket has room at rate, or ctx ends.
func (q *moveQuota) wait(ctx context.Context, rate int64) error {
	if rate == math.MaxInt64 {
		return nil
	}
	for {
		d := q.b.Take(0, float64(rate), time.Now())
		if d == 0 {
			return nil
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// take counts n bytes copied at rate.
func (q *moveQuota) take(rate, n int64) {
	if rate == math.MaxInt64 {
		return
	}
	q.b.Take(float64(n), float64(rate), time.Now())
}
