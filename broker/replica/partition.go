package replica

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	klog "github.com/ktoolhq/ktool/broker/log"
	"github.com/ktoolhq/ktool/internal/batch"
)

// State is a partition's leadership as the controller decided it.
type State struct {
	Leader          int32
	LeaderEpoch     int32
	ISR             []int32
	Replicas        []int32 // AR, in preferred order
	ZkVersion       int32   // version of the partition state znode
	ControllerEpoch int32
}

// follower is what a leader knows of one follower.
type follower struct {
	leo               int64
	lastCaughtUp      time.Time
	lastFetch         time.Time
	lastFetchLeaderLE int64 // the leader's LEO when the previous fetch arrived
}

// Partition is one replica of a topic partition on this broker.
type Partition struct {
	Topic string
	ID    int32

	self int32
	// logp is the partition's log. A move between log dirs (move.go)
	// replaces it under mu; readers that load it without mu retry once
	// on a log that was closed by the swap (readLog).
	logp   atomic.Pointer[klog.Log]
	logger *slog.Logger
	now    func() time.Time
	// dirp is the log dir holding the partition, replaced by a move;
	// storageFailed reports an I/O error of its log, which takes the whole
	// dir offline (KIP-112).
	dirp          atomic.Pointer[string]
	storageFailed func(error)

	mu         sync.Mutex
	state      State
	leader     bool
	epochStart int64 // LEO when this broker became leader in the current epoch
	followers  map[int32]*follower
	minISR     int
	lagMax     time.Duration
	pendingIsr bool
	// pendingAdd is a follower whose ISR expansion is being written, or whose
	// write failed without a known outcome (it may have landed, or land later:
	// a request stuck on a cut connection): the high watermark waits for it, or
	// an acknowledged write could be missing from a member of the ISR the
	// controller reads (Kafka's maximal ISR). A later ISR write or a new
	// leader epoch settles it.
	pendingAdd int32
	// isrUnsure is the leader epoch in which an ISR write failed without a
	// known outcome (-1 for none): the store may hold the new ISR while this
	// broker kept the old one, and with no further change to write nothing
	// would tell it (a shrink that landed left the store's ISR narrower than the
	// leader's for good, and the partition offline once the leader died). The
	// manager reads the store's state back until it knows (settleIsr).
	isrUnsure   int32
	deleted     bool
	offline     bool     // its log dir failed: it serves nothing until the broker restarts
	consumerW   watchers // woken when the high watermark moves
	replicaW    watchers // woken when the log end offset moves (followers' long polls)
	isrChangedW watchers // woken when the ISR changes (acks=all waits)
}

func newPartition(topic string, id int32, self int32, l *klog.Log, logger *slog.Logger) *Partition {
	p := &Partition{
		Topic: topic, ID: id, self: self, now: time.Now, storageFailed: func(error) {},
		logger:     logger.With("topic", topic, "partition", id),
		followers:  map[int32]*follower{},
		minISR:     1,
		lagMax:     30 * time.Second,
		pendingAdd: -1,
		isrUnsure:  -1,
		state:      State{Leader: -1, LeaderEpoch: -1},
	}
	p.logp.Store(l)
	p.setDir("")
	return p
}

// Log is the partition's log.
func (p *Partition) Log() *klog.Log { return p.logp.Load() }

// Dir is the log dir (one of log.dirs) holding the partition's log.
func (p *Partition) Dir() string { return *p.dirp.Load() }

func (p *Partition) setDir(dir string) { p.dirp.Store(&dir) }

// State returns the current leadership state.
func (p *Partition) State() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.state
	st.ISR = slices.Clone(st.ISR)
	st.Replicas = slices.Clone(st.Replicas)
	return st
}

// inISR reports whether id is in the ISR last applied, without the copy
// State makes: a follower asks for every partition it fetches, each fetch.
func (p *Partition) inISR(id int32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Contains(p.state.ISR, id)
}

// LeaderAndEpoch is the leader and leader epoch of the last LeaderAndIsr
// applied (-1, -1 before the first).
func (p *Partition) LeaderAndEpoch() (int32, int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state.Leader, p.state.LeaderEpoch
}

// Offline reports whether the partition's log dir failed.
func (p *Partition) Offline() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.offline
}

// notLeaderLocked is the error of a request only a leader serves, asked of a
// partition that is not leading: KAFKA_STORAGE_ERROR when its dir failed.
func (p *Partition) notLeaderLocked() error {
	if p.offline {
		return kerr.KafkaStorageError
	}
	return kerr.NotLeaderForPartition
}

// checkStorage reports err to the manager when the disk returned it, and
// returns it.
func (p *Partition) checkStorage(err error) error {
	if isStorageErr(err) {
		p.storageFailed(err)
	}
	return err
}

// SendFailed is told of an error sending records read from the log (the
// sendfile of a fetch, which reads the disk after the log has found the
// batches): when the disk returned it, the log dir goes offline as for an
// error inside the log (KIP-112). A connection's errors are not the disk's
// and change nothing.
func (p *Partition) SendFailed(err error) { p.checkStorage(err) }

// Sync makes the partition's records below end durable (flush.messages:
// log.Log.Sync, shared with concurrent callers); a failed sync fails the
// partition's log dir like any storage error.
func (p *Partition) Sync(end int64) error {
	l := p.Log()
	err := l.Sync(end)
	if errors.Is(err, klog.ErrClosed) {
		// A move's swap closed the log (after syncing it): the new one
		// holds the records, durably.
		p.mu.Lock()
		nl := p.Log()
		p.mu.Unlock()
		if nl != l {
			err = nl.Sync(end)
		}
	}
	return p.checkStorage(err)
}

// goOffline takes the partition out of service after its log dir failed:
// it leads and follows nothing, its waiters wake (and find it offline), and
// its log is closed without writing anything more to the failed disk.
func (p *Partition) goOffline() {
	p.mu.Lock()
	p.offline = true
	p.leader = false
	p.pendingAdd = -1
	p.followers = map[int32]*follower{}
	p.mu.Unlock()
	p.consumerW.wakeAll()
	p.replicaW.wakeAll()
	p.isrChangedW.wakeAll()
	p.Log().Abandon()
}

// IsLeader reports whether this broker leads the partition.
func (p *Partition) IsLeader() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leader
}

// SetLimits applies min.insync.replicas and replica.lag.time.max.ms.
func (p *Partition) SetLimits(minISR int, lagMax time.Duration) {
	p.mu.Lock()
	p.minISR, p.lagMax = minISR, lagMax
	p.mu.Unlock()
}

// HighWatermark is the offset below which records are committed.
func (p *Partition) HighWatermark() int64 { return p.Log().HighWatermark() }

// makeLeader applies a LeaderAndIsr that names this broker leader.
func (p *Partition) makeLeader(st State) {
	p.mu.Lock()
	defer p.mu.Unlock()
	newEpoch := !p.leader || st.LeaderEpoch != p.state.LeaderEpoch
	p.state = st
	p.leader = true
	p.pendingAdd = -1
	p.isrUnsure = -1
	if newEpoch {
		leo := p.Log().LogEndOffset()
		p.epochStart = leo
		p.Log().AssignEpochStart(st.LeaderEpoch, leo)
		now := p.now()
		p.followers = map[int32]*follower{}
		for _, r := range st.Replicas {
			if r == p.self {
				continue
			}
			// Followers in the ISR count as caught up now, so they get replica.lag.time.max.ms
			// to fetch from the new leader before being dropped.
			f := &follower{leo: -1}
			if slices.Contains(st.ISR, r) {
				f.lastCaughtUp = now
			}
			p.followers[r] = f
		}
	}
	p.maybeAdvanceHWLocked()
	p.consumerW.wakeAll()
	p.replicaW.wakeAll()
	p.isrChangedW.wakeAll()
}

// makeFollower applies a LeaderAndIsr that names another broker leader.
func (p *Partition) makeFollower(st State) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state = st
	p.leader = false
	p.pendingAdd = -1
	p.followers = map[int32]*follower{}
	p.consumerW.wakeAll()
	p.replicaW.wakeAll()
	p.isrChangedW.wakeAll()
}

// checkEpoch validates a client's current_leader_epoch (KIP-320); -1 skips the check.
func (p *Partition) checkEpochLocked(epoch int32) error {
	switch {
	case epoch < 0:
		return nil
	case epoch < p.state.LeaderEpoch:
		return kerr.FencedLeaderEpoch
	case epoch > p.state.LeaderEpoch:
		return kerr.UnknownLeaderEpoch
	}
	return nil
}

// LastOffsetForLeaderEpoch answers OffsetForLeaderEpoch as the leader:
// the largest epoch at or below epoch in the epoch cache and where it ends
// (the start of the next larger epoch, or the log end offset for the latest
// one), as Kafka answers. The answer is never cut down to the high watermark,
// for consumers either: a new leader learns the high watermark one fetch
// after its predecessor, so its own may still be below records the
// predecessor committed and consumers read, and telling them the epoch ends
// there would make them report data loss and read those records again.
// currentEpoch is the asker's view of the leader epoch (-1 skips the check).
func (p *Partition) LastOffsetForLeaderEpoch(currentEpoch, epoch int32) (int32, int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.leader {
		return -1, -1, p.notLeaderLocked()
	}
	if err := p.checkEpochLocked(currentEpoch); err != nil {
		return -1, -1, err
	}
	e, end := p.Log().EndOffsetForEpoch(epoch)
	return e, end, nil
}

// AppendAsLeader appends a produce request's records. acks=-1 is refused up front
// when the ISR is smaller than min.insync.replicas.
func (p *Partition) AppendAsLeader(records []byte, acks int16) (klog.AppendResult, error) {
	return p.AppendAsLeaderTxn(records, acks, nil)
}

// AppendAsLeaderTxn is AppendAsLeader with the coordinator's verification of
// a transactional batch that opens a transaction (klog.Log.AppendAsLeaderTxn).
func (p *Partition) AppendAsLeaderTxn(records []byte, acks int16, verified *klog.TxnVerification) (klog.AppendResult, error) {
	return p.appendAsLeader(acks, func(epoch int32) (klog.AppendResult, error) {
		return p.Log().AppendAsLeaderTxn(records, epoch, verified)
	})
}

// AppendAsCoordinator appends a batch the group coordinator built, with
// acks=all (klog.Log.AppendAsCoordinator).
func (p *Partition) AppendAsCoordinator(records []byte) (klog.AppendResult, error) {
	return p.appendAsLeader(-1, func(epoch int32) (klog.AppendResult, error) {
		return p.Log().AppendAsCoordinator(records, epoch)
	})
}

func (p *Partition) appendAsLeader(acks int16, appendFn func(epoch int32) (klog.AppendResult, error)) (klog.AppendResult, error) {
	p.mu.Lock()
	if !p.leader {
		err := p.notLeaderLocked()
		p.mu.Unlock()
		return klog.AppendResult{}, err
	}
	if acks == -1 && len(p.state.ISR) < p.minISR {
		p.mu.Unlock()
		return klog.AppendResult{}, kerr.NotEnoughReplicas
	}
	epoch := p.state.LeaderEpoch
	res, err := appendFn(epoch)
	if err != nil {
		p.mu.Unlock()
		return res, p.checkStorage(err)
	}
	if !res.Duplicate {
		p.maybeAdvanceHWLocked()
	}
	p.mu.Unlock()
	p.replicaW.wakeAll()
	return res, nil
}

// AppendMarker appends a transaction marker as leader (WriteTxnMarkers), with
// the ISR checked against min.insync.replicas first as for acks=all. The
// caller waits for WaitReplicated past the result's LastOffset.
func (p *Partition) AppendMarker(pid int64, epoch int16, m batch.Marker) (klog.AppendResult, error) {
	p.mu.Lock()
	if !p.leader {
		err := p.notLeaderLocked()
		p.mu.Unlock()
		return klog.AppendResult{}, err
	}
	if len(p.state.ISR) < p.minISR {
		p.mu.Unlock()
		return klog.AppendResult{}, kerr.NotEnoughReplicas
	}
	res, err := p.Log().AppendMarker(pid, epoch, m, p.state.LeaderEpoch)
	p.checkStorage(err)
	if err != nil && res.NumRecords == 0 {
		p.mu.Unlock()
		return res, err
	}
	p.maybeAdvanceHWLocked()
	p.mu.Unlock()
	p.replicaW.wakeAll()
	// The last stable offset may have moved below the high watermark.
	p.consumerW.wakeAll()
	return res, err
}

// WaitReplicated blocks until the high watermark passes offset (acks=all), the
// partition loses leadership, or ctx ends. It answers NOT_ENOUGH_REPLICAS_AFTER_APPEND
// when the ISR shrank below min.insync.replicas while waiting.
func (p *Partition) WaitReplicated(ctx context.Context, offset int64) error {
	if done, err := p.Replicated(offset); done {
		return err
	}
	w := NewWaiter()
	for {
		p.mu.Lock()
		p.consumerW.add(w)
		p.isrChangedW.add(w)
		p.mu.Unlock()
		// Registered first, then read: a high watermark that moves after
		// the read wakes w.
		if done, err := p.Replicated(offset); done {
			p.Unwatch(w)
			return err
		}
		select {
		case <-w.C:
		case <-ctx.Done():
			p.Unwatch(w)
			return kerr.RequestTimedOut
		}
	}
}

// Replicated is WaitReplicated without the wait: done when the high
// watermark already passes offset (err NOT_ENOUGH_REPLICAS_AFTER_APPEND if
// the ISR is below min.insync.replicas) or the partition is no longer led
// here (err says why). A leader alone in its ISR moves the high watermark in
// its append, so an acks=all produce at RF=1 is answered without parking.
func (p *Partition) Replicated(offset int64) (done bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.leader {
		return true, p.notLeaderLocked()
	}
	if p.Log().HighWatermark() <= offset {
		return false, nil
	}
	if len(p.state.ISR) < p.minISR {
		return true, kerr.NotEnoughReplicasAfterAppend
	}
	return true, nil
}

// maybeAdvanceHWLocked moves the high watermark to the smallest LEO in the ISR.
func (p *Partition) maybeAdvanceHWLocked() {
	if !p.leader {
		return
	}
	hw := p.Log().LogEndOffset()
	members := p.state.ISR
	if p.pendingAdd >= 0 && !slices.Contains(members, p.pendingAdd) {
		members = append(slices.Clone(members), p.pendingAdd)
	}
	for _, r := range members {
		if r == p.self {
			continue
		}
		f, ok := p.followers[r]
		if !ok || f.leo < 0 {
			// A follower we have not heard from in this epoch holds the HW where it is.
			return
		}
		hw = min(hw, f.leo)
	}
	if hw > p.Log().HighWatermark() {
		p.Log().SetHighWatermark(hw)
		p.consumerW.wakeAll()
	}
}

// Unwatch forgets w on this partition, so waits that time out leave nothing behind.
func (p *Partition) Unwatch(w *Waiter) {
	p.consumerW.remove(w)
	p.replicaW.remove(w)
	p.isrChangedW.remove(w)
}

// WatchHW registers w to be woken when the high watermark moves.
func (p *Partition) WatchHW(w *Waiter) { p.consumerW.add(w) }

// WatchLEO registers w to be woken when the log end offset moves.
func (p *Partition) WatchLEO(w *Waiter) { p.replicaW.add(w) }

// ReadInfo is what a fetch needs besides the records.
type ReadInfo struct {
	HighWatermark    int64
	LastStableOffset int64
	LogStartOffset   int64
	LogEndOffset     int64
}

// ReadForConsumer reads committed records (below the high watermark) at
// offset; with readCommitted only below the last stable offset.
func (p *Partition) ReadForConsumer(offset int64, maxBytes int32, currentEpoch int32, minOne, readCommitted bool) (klog.Region, ReadInfo, error) {
	p.mu.Lock()
	if !p.leader {
		err := p.notLeaderLocked()
		p.mu.Unlock()
		return klog.Region{}, ReadInfo{}, err
	}
	if err := p.checkEpochLocked(currentEpoch); err != nil {
		p.mu.Unlock()
		return klog.Region{}, ReadInfo{}, err
	}
	l := p.Log()
	p.mu.Unlock()
	info := ReadInfo{LastStableOffset: l.LastStableOffset(), HighWatermark: l.HighWatermark(), LogStartOffset: l.LogStartOffset(), LogEndOffset: l.LogEndOffset()}
	info.LastStableOffset = min(info.LastStableOffset, info.HighWatermark)
	upper := info.HighWatermark
	if readCommitted {
		upper = info.LastStableOffset
	}
	if offset > upper && offset <= info.LogEndOffset {
		// Uncommitted (or undecided) but existing: nothing to return yet, not out of range.
		return klog.Region{}, info, nil
	}
	r, err := p.readLog(l, offset, maxBytes, upper, minOne)
	return r, info, p.checkStorage(err)
}

// ReadForFollower serves a follower's fetch: it records the follower's position,
// may advance the high watermark and expand the ISR, and reads up to the LEO.
func (p *Partition) ReadForFollower(replica int32, offset int64, maxBytes int32, currentEpoch int32, minOne bool) (klog.Region, ReadInfo, *State, error) {
	p.mu.Lock()
	if !p.leader {
		err := p.notLeaderLocked()
		p.mu.Unlock()
		return klog.Region{}, ReadInfo{}, nil, err
	}
	if err := p.checkEpochLocked(currentEpoch); err != nil {
		p.mu.Unlock()
		return klog.Region{}, ReadInfo{}, nil, err
	}
	f, ok := p.followers[replica]
	if !ok {
		p.mu.Unlock()
		return klog.Region{}, ReadInfo{}, nil, kerr.NotLeaderForPartition
	}
	now := p.now()
	leo := p.Log().LogEndOffset()
	if offset <= leo {
		f.leo = offset
		if offset >= leo {
			f.lastCaughtUp = now
		} else if offset >= f.lastFetchLeaderLE && !f.lastFetch.IsZero() {
			f.lastCaughtUp = f.lastFetch
		}
	}
	f.lastFetch, f.lastFetchLeaderLE = now, leo
	var expand *State
	if !slices.Contains(p.state.ISR, replica) && !p.pendingIsr && (p.pendingAdd < 0 || p.pendingAdd == replica) &&
		f.leo >= p.Log().HighWatermark() && f.leo >= p.epochStart {
		st := p.state
		st.ISR = append(slices.Clone(p.state.ISR), replica)
		slices.Sort(st.ISR)
		expand = &st
		p.pendingIsr = true
		p.pendingAdd = replica
	}
	p.maybeAdvanceHWLocked()
	l := p.Log()
	p.mu.Unlock()
	info := ReadInfo{HighWatermark: l.HighWatermark(), LastStableOffset: l.LastStableOffset(), LogStartOffset: l.LogStartOffset(), LogEndOffset: leo}
	r, err := p.readLog(l, offset, maxBytes, leo, minOne)
	return r, info, expand, p.checkStorage(err)
}

// shrinkCandidate returns the ISR without followers that have not caught up within
// replica.lag.time.max.ms and are behind the log end, or nil when nothing changes. A follower whose
// expansion is unsettled (pendingAdd) and that lags too is settled by writing
// the ISR without it.
func (p *Partition) shrinkCandidate() *State {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.leader || p.pendingIsr {
		return nil
	}
	now := p.now()
	leo := p.Log().LogEndOffset()
	lagging := func(r int32) bool {
		f, ok := p.followers[r]
		// As Kafka: a follower known to hold the leader's log end is in sync
		// however long ago it fetched (an idle partition, a fetch of many
		// partitions that takes a while); any other has lagged once it has not
		// caught up within replica.lag.time.max.ms, counted from the start of
		// this leader epoch for one not heard from since.
		return !ok || (f.leo != leo && now.Sub(f.lastCaughtUp) > p.lagMax)
	}
	var keep []int32
	for _, r := range p.state.ISR {
		if r == p.self || !lagging(r) {
			keep = append(keep, r)
		}
	}
	unsettled := p.pendingAdd >= 0 && !slices.Contains(p.state.ISR, p.pendingAdd) && lagging(p.pendingAdd)
	if len(keep) == len(p.state.ISR) && !unsettled {
		return nil
	}
	st := p.state
	st.ISR = keep
	p.pendingIsr = true
	return &st
}

// isrWritten applies an ISR change that was written to the store (ok) or clears
// the pending flag after a failed write. After a failed write pendingAdd stays
// as it is: the outcome of an expansion may be unknown.
func (p *Partition) isrWritten(st State, ok bool) {
	p.mu.Lock()
	p.pendingIsr = false
	if ok {
		// The store holds st now: a follower not in it is not in the ISR.
		p.pendingAdd = -1
		p.isrUnsure = -1
	} else if p.leader && st.LeaderEpoch == p.state.LeaderEpoch {
		p.isrUnsure = st.LeaderEpoch
	}
	if ok && p.leader && st.LeaderEpoch == p.state.LeaderEpoch {
		p.state.ISR = st.ISR
		p.state.ZkVersion = st.ZkVersion
		p.maybeAdvanceHWLocked()
	}
	p.mu.Unlock()
	p.isrChangedW.wakeAll()
	p.consumerW.wakeAll()
}

// unsureIsr returns the leader's state when an ISR write of this epoch ended
// without a known outcome and no other ISR write is in flight, marking one in
// flight (the read back of settleIsr), else nil.
func (p *Partition) unsureIsr() *State {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.leader || p.pendingIsr || p.isrUnsure < 0 || p.isrUnsure != p.state.LeaderEpoch {
		return nil
	}
	p.pendingIsr = true
	st := p.state
	return &st
}

// isrRead ends the read back unsureIsr began: with the store's state, when
// it names this broker leader at the current epoch, the ISR and znode version
// are the store's (a write of the leader's own that landed); a state of another
// leader or epoch leaves the partition to the LeaderAndIsr that follows it.
// pendingAdd stays: a write still in flight may land yet.
func (p *Partition) isrRead(stored State, ok bool) {
	p.mu.Lock()
	p.pendingIsr = false
	switch {
	case !ok || !p.leader:
	case stored.Leader == p.self && stored.LeaderEpoch == p.state.LeaderEpoch:
		p.state.ISR = slices.Clone(stored.ISR)
		p.state.ZkVersion = stored.ZkVersion
		p.isrUnsure = -1
		p.maybeAdvanceHWLocked()
	default:
		p.isrUnsure = -1
	}
	p.mu.Unlock()
	p.isrChangedW.wakeAll()
	p.consumerW.wakeAll()
}

// readLog reads from l, the log the caller took under mu, and once more from
// the log that replaced it when a move's swap closed l in between: the swap
// replaces the log under mu, so taking mu waits for it to finish, and the new
// log holds every offset the old one did.
func (p *Partition) readLog(l *klog.Log, offset int64, maxBytes int32, upper int64, minOne bool) (klog.Region, error) {
	r, err := l.Read(offset, maxBytes, upper, minOne)
	if !errors.Is(err, klog.ErrClosed) {
		return r, err
	}
	p.mu.Lock()
	nl := p.Log()
	p.mu.Unlock()
	if nl == l {
		return r, err
	}
	return nl.Read(offset, maxBytes, upper, minOne)
}
