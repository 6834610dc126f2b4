package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	klog "github.com/ktoolhq/ktool/broker/log"
)

// TP names a topic partition.
type TP struct {
	Topic     string
	Partition int32
}

func (tp TP) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// IsrWriter persists a leader's ISR change (conditionally on st.ZkVersion) and
// returns the new znode version; the controller learns of it through the store.
type IsrWriter interface {
	WriteIsr(ctx context.Context, tp TP, st State) (int32, error)
}

// IsrReader reads a partition's leader, epoch, ISR and znode version as the
// store holds them. An IsrWriter that is one lets a leader learn the outcome
// of an ISR write that failed without one.
type IsrReader interface {
	ReadIsr(ctx context.Context, tp TP) (State, error)
}

// Settings are what the manager needs per topic, resolved by the broker.
type Settings struct {
	Log    klog.Config
	MinISR int
}

// Config configures a Manager.
type Config struct {
	BrokerID int32
	LogDirs  []string
	// TopicSettings resolves a topic's log and replication settings.
	TopicSettings func(topic string) Settings
	Isr           IsrWriter
	// OnIsrChange is called after an ISR change this leader wrote (metrics).
	OnIsrChange func(shrink bool)
	Logger      *slog.Logger
	// OnDirFailure is called once per log dir that failed, after its
	// partitions went offline, with the number of dirs still online.
	OnDirFailure func(dir string, online int)
	// ReplicaLagMax is replica.lag.time.max.ms.
	ReplicaLagMax time.Duration
	Fetch         FetcherConfig
	// FileReserve is log.fd.reserve and FileCacheSize log.fd.cache.size:
	// Load checks the open-file limit against the partitions found
	// (klog.PlanFiles) and sizes the descriptor cache of inactive segments.
	FileReserve   int
	FileCacheSize int
	// LoadThreads opens partition logs in parallel at Load: at least 1.
	LoadThreads int
	// MoveRate is replica.alter.log.dirs.io.max.bytes.per.second, read
	// before each chunk a move copies (move.go); nil or <= 0 is unlimited.
	MoveRate func() int64
}

// Manager owns the partitions this broker hosts.
type Manager struct {
	cfg    Config
	logger *slog.Logger
	dirs   []*logDir // log.dirs in order (logdirs.go), guarded by dirMu
	dirMu  sync.Mutex

	// changeMu serialises controller requests (LeaderAndIsr, StopReplica): each
	// checks epochs and applies as one step, as Kafka's replicaStateChangeLock.
	changeMu sync.Mutex

	mu              sync.RWMutex
	parts           map[TP]*Partition
	controllerEpoch int32
	fetchers        map[int32]*fetcher // by leader broker id
	// moves are the replicas moving to another log dir, preferred the
	// dirs chosen for replicas not hosted yet (move.go).
	moves     map[TP]*move
	preferred map[TP]string
	moveQuota moveQuota
	// leadersW is woken after every LeaderAndIsr and StopReplica applied.
	leadersW watchers

	files *klog.FileCache // set by Load; nil gives each log its own

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewManager returns a Manager; call Load, then Start.
func NewManager(cfg Config) *Manager {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ReplicaLagMax <= 0 {
		cfg.ReplicaLagMax = 30 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{
		cfg: cfg, logger: cfg.Logger, dirs: newLogDirs(cfg.LogDirs), parts: map[TP]*Partition{}, fetchers: map[int32]*fetcher{},
		moves: map[TP]*move{}, preferred: map[TP]string{},
		ctx: ctx, cancel: cancel,
	}
}

// ParseDirName splits a partition directory name "<topic>-<partition>".
func ParseDirName(name string) (TP, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return TP{}, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 {
		return TP{}, false
	}
	return TP{Topic: name[:i], Partition: int32(p)}, true
}

// Load opens (and recovers) every partition log found in the log directories.
// Partitions start with no leadership until the controller says otherwise.
// It first checks that the open-file limit holds the partitions found. A dir
// whose disk fails while loading goes offline (KIP-112); with none left,
// Load fails.
func (m *Manager) Load() error {
	found, err := m.scanDirs()
	if err != nil {
		return err
	}
	type todoLog struct {
		tp         TP
		root, path string
	}
	todo := make([]todoLog, 0, len(found))
	for tp, root := range found {
		path, err := partitionDir(root, tp)
		if err != nil {
			return err
		}
		todo = append(todo, todoLog{tp, root, path})
	}
	budget, err := klog.PlanFiles(len(todo), m.cfg.FileReserve, m.cfg.FileCacheSize)
	if err != nil {
		return err
	}
	m.logger.Info("open-file budget", "limit", budget.Limit, "partitions", budget.Partitions,
		"reserve", budget.Reserve, "inactive_segment_cache", budget.CacheSize)
	m.files = klog.NewFileCache(budget.CacheSize)

	// A topic's settings are resolved once, not for each of its
	// partitions: a resolution takes about 12 µs, half of what opening an
	// empty log does.
	settings := make(map[string]Settings)
	for _, t := range todo {
		if _, ok := settings[t.tp.Topic]; !ok {
			settings[t.tp.Topic] = m.cfg.TopicSettings(t.tp.Topic)
		}
	}
	// Logs open in parallel: after a clean shutdown each is a few small
	// reads and a directory fsync, after a crash a rescan.
	var mu sync.Mutex
	var errs []error
	m.parallel(len(todo), func(i int) {
		t := todo[i]
		if _, err := m.openWith(t.tp, t.root, t.path, settings[t.tp.Topic]); err != nil {
			if isStorageErr(err) {
				m.markFailed(t.root, err)
				return
			}
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, d := range m.Dirs() {
		if d.Err == nil {
			continue
		}
		m.logger.Error("log dir offline at start", "dir", d.Path, "err", d.Err)
		m.mu.Lock()
		var hit []*Partition
		for tp, p := range m.parts {
			if p.Dir() == d.Path {
				hit = append(hit, p)
				delete(m.parts, tp)
			}
		}
		m.mu.Unlock()
		for _, p := range hit {
			p.Log().Abandon()
		}
	}
	if m.onlineDirs() == 0 {
		return fmt.Errorf("%w: %s", errAllDirsFailed, strings.Join(m.cfg.LogDirs, ", "))
	}
	return nil
}

// parallel runs f(0) to f(n-1) on LoadThreads goroutines and waits.
func (m *Manager) parallel(n int, f func(int)) {
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(max(m.cfg.LoadThreads, 1), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				f(i)
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
}

// open opens tp's log in dir, a directory of the log dir root.
func (m *Manager) open(tp TP, root, dir string) (*Partition, error) {
	return m.openWith(tp, root, dir, m.cfg.TopicSettings(tp.Topic))
}

// openWith is open with tp's topic settings resolved.
func (m *Manager) openWith(tp TP, root, dir string, st Settings) (*Partition, error) {
	st.Log.FileCache = m.files
	l, err := klog.Open(dir, st.Log, m.logger.With("topic", tp.Topic, "partition", tp.Partition))
	if err != nil {
		return nil, fmt.Errorf("opening log of %s: %w", tp, err)
	}
	p := newPartition(tp.Topic, tp.Partition, m.cfg.BrokerID, l, m.logger)
	p.setDir(root)
	p.storageFailed = func(err error) { m.reportStorageError(p.Dir(), err) }
	p.SetLimits(st.MinISR, m.cfg.ReplicaLagMax)
	m.mu.Lock()
	m.parts[tp] = p
	m.mu.Unlock()
	return p, nil
}

// Get returns a hosted partition, or nil.
func (m *Manager) Get(tp TP) *Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.parts[tp]
}

// unsorted returns the hosted partitions that are online, in no order, for
// the periodic passes over every partition: sorting 10,000 of them each
// second costs more than the passes do at idle.
func (m *Manager) unsorted() []*Partition {
	m.mu.RLock()
	all := make([]*Partition, 0, len(m.parts))
	for _, p := range m.parts {
		all = append(all, p)
	}
	m.mu.RUnlock()
	return slices.DeleteFunc(all, (*Partition).Offline)
}

// Partitions returns the hosted partitions that are online (their log dir
// has not failed), sorted by topic and partition.
func (m *Manager) Partitions() []*Partition {
	m.mu.RLock()
	all := make([]*Partition, 0, len(m.parts))
	for _, p := range m.parts {
		all = append(all, p)
	}
	m.mu.RUnlock()
	out := slices.DeleteFunc(all, (*Partition).Offline)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// ApplyTopicSettings re-resolves settings of a topic's partitions after a config change.
func (m *Manager) ApplyTopicSettings(topic string) {
	st := m.cfg.TopicSettings(topic)
	for _, p := range m.Partitions() {
		if p.Topic == topic {
			p.Log().SetConfig(st.Log)
			p.SetLimits(st.MinISR, m.cfg.ReplicaLagMax)
		}
	}
}

// LeaderUpdate is one partition of a LeaderAndIsr request.
type LeaderUpdate struct {
	TP    TP
	State State
	IsNew bool
}

// Endpoint is where a leader listens.
type Endpoint struct {
	ID   int32
	Addr string
}

// ErrStaleControllerEpoch is returned for requests of a fenced controller.
var ErrStaleControllerEpoch = kerr.StaleControllerEpoch

// CheckControllerEpoch fences requests from controllers older than the newest seen.
func (m *Manager) CheckControllerEpoch(epoch int32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if epoch < m.controllerEpoch {
		return ErrStaleControllerEpoch
	}
	m.controllerEpoch = epoch
	return nil
}

// ControllerEpoch is the newest controller epoch seen.
func (m *Manager) ControllerEpoch() int32 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.controllerEpoch
}

// BecomeLeaderOrFollower applies a LeaderAndIsr request and returns an error per
// partition (nil for success).
func (m *Manager) BecomeLeaderOrFollower(controllerEpoch int32, updates []LeaderUpdate, leaders []Endpoint) (map[TP]error, error) {
	m.changeMu.Lock()
	defer m.changeMu.Unlock()
	if err := m.CheckControllerEpoch(controllerEpoch); err != nil {
		return nil, err
	}
	addrs := map[int32]string{}
	for _, e := range leaders {
		addrs[e.ID] = e.Addr
	}
	// Partitions are applied by a few workers in parallel: a new partition
	// creates its log directory and files, and a topic creation makes
	// thousands of them.
	errs := make(map[TP]error, len(updates))
	res := make([]error, len(updates))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(applyWorkers, len(updates)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				res[i] = m.apply(updates[i], addrs)
			}
		}()
	}
	for i := range updates {
		work <- i
	}
	close(work)
	wg.Wait()
	for i, u := range updates {
		errs[u.TP] = res[i]
	}
	m.leadersW.wakeAll()
	return errs, nil
}

// applyWorkers is how many partitions of one LeaderAndIsr are applied at once.
const applyWorkers = 16

// AwaitLeaderEpoch waits until this broker's state for tp reaches leader
// epoch epoch (leading it or not), or ctx ends. A follower learns of its new
// leader from the controller at about the time the leader does, and often
// asks first (the leader is still applying the rest of the request): the
// leader holds the question until its own LeaderAndIsr is applied, an event,
// rather than refuse it and have the follower, and every acks=all producer
// waiting on it, sleep replica.fetch.backoff.ms.
func (m *Manager) AwaitLeaderEpoch(ctx context.Context, tp TP, epoch int32) {
	w := NewWaiter()
	defer m.leadersW.remove(w)
	for {
		m.leadersW.add(w)
		if p := m.Get(tp); p != nil && p.State().LeaderEpoch >= epoch {
			return
		}
		select {
		case <-w.C:
		case <-ctx.Done():
			return
		}
	}
}

// apply makes this broker leader or follower of one partition.
func (m *Manager) apply(u LeaderUpdate, addrs map[int32]string) error {
	if !slices.Contains(u.State.Replicas, m.cfg.BrokerID) {
		return kerr.UnknownTopicOrPartition
	}
	p := m.Get(u.TP)
	if p == nil {
		if !u.IsNew && m.hasOfflineDir() {
			// Its log may be in the failed dir: creating an empty one elsewhere
			// would serve a replica without its records (Kafka refuses too).
			return kerr.KafkaStorageError
		}
		root, ok := m.preferredDir(u.TP)
		if !ok {
			root, ok = m.pickDir()
		}
		if !ok {
			return kerr.KafkaStorageError
		}
		dir, err := partitionDir(root, u.TP)
		if err != nil {
			m.unplace(root)
			return err
		}
		p, err = m.open(u.TP, root, dir)
		if err != nil {
			m.unplace(root)
			m.logger.Error("creating partition", "partition", u.TP.String(), "dir", root, "err", err)
			if isStorageErr(err) {
				m.reportStorageError(root, err)
			}
			return kerr.KafkaStorageError
		}
	}
	if p.Offline() {
		return kerr.KafkaStorageError
	}
	cur := p.State()
	if cur.LeaderEpoch >= 0 && u.State.LeaderEpoch < cur.LeaderEpoch {
		return kerr.StaleControllerEpoch
	}
	if cur.LeaderEpoch >= 0 && cur.LeaderEpoch == u.State.LeaderEpoch && cur.Leader == u.State.Leader {
		// Same epoch: nothing to do. The controller resends current states (at
		// failover); its copy may predate an ISR change this leader made, so it
		// must not overwrite ours (Kafka ignores same-epoch requests too).
		return nil
	}
	m.removeFromFetchers(u.TP)
	if u.State.Leader == m.cfg.BrokerID {
		p.makeLeader(u.State)
		m.logger.Info("became leader", "topic", u.TP.Topic, "partition", u.TP.Partition,
			"leader_epoch", u.State.LeaderEpoch, "isr", u.State.ISR)
		return nil
	}
	p.makeFollower(u.State)
	if u.State.Leader >= 0 {
		if addr, ok := addrs[u.State.Leader]; ok {
			m.addToFetcher(u.State.Leader, addr, p)
		} else {
			m.logger.Warn("leader endpoint unknown; not fetching", "partition", u.TP.String(), "leader", u.State.Leader)
		}
	}
	m.logger.Info("became follower", "topic", u.TP.Topic, "partition", u.TP.Partition,
		"leader", u.State.Leader, "leader_epoch", u.State.LeaderEpoch)
	return nil
}

// StopReplica stops replicating tp and, with del, deletes its log.
func (m *Manager) StopReplica(controllerEpoch int32, tp TP, del bool) error {
	m.changeMu.Lock()
	defer m.changeMu.Unlock()
	if err := m.CheckControllerEpoch(controllerEpoch); err != nil {
		return err
	}
	m.removeFromFetchers(tp)
	defer m.leadersW.wakeAll()
	m.stopMoveOf(tp)
	if del {
		m.mu.Lock()
		delete(m.preferred, tp)
		m.mu.Unlock()
	}
	p := m.Get(tp)
	if p == nil {
		return nil
	}
	p.makeFollower(State{Leader: -1, LeaderEpoch: p.State().LeaderEpoch, Replicas: p.State().Replicas})
	if !del {
		return nil
	}
	m.mu.Lock()
	delete(m.parts, tp)
	m.mu.Unlock()
	m.unplace(p.Dir())
	p.mu.Lock()
	p.deleted = true
	p.mu.Unlock()
	if err := p.Log().Delete(); err != nil {
		return fmt.Errorf("deleting %s: %w", tp, err)
	}
	return nil
}

// Start runs the background work: ISR shrink checks, flushing, retention and
// compaction (one partition at a time, like Kafka's single cleaner thread).
func (m *Manager) Start(retentionEvery, cleanEvery time.Duration) {
	m.wg.Add(4)
	go m.every(m.cfg.ReplicaLagMax/2, m.shrinkIsrs)
	go m.every(time.Second, m.flush)
	go m.every(retentionEvery, m.retention)
	go m.every(cleanEvery, m.clean)
}

func (m *Manager) clean() {
	for _, p := range m.unsorted() {
		if m.ctx.Err() != nil {
			return
		}
		res, err := p.Log().Clean(m.ctx)
		if errors.Is(err, klog.ErrClosed) {
			continue // removed (deleted, moved, its dir failed) since the pass began
		}
		if err != nil {
			p.checkStorage(err)
			if m.ctx.Err() == nil {
				m.logger.Error("compaction failed", "topic", p.Topic, "partition", p.ID, "err", err)
			}
			continue
		}
		if res.SegmentsCleaned > 0 {
			m.logger.Info("compacted", "topic", p.Topic, "partition", p.ID, "segments", res.SegmentsCleaned,
				"bytes_before", res.BytesBefore, "bytes_after", res.BytesAfter, "records_removed", res.RecordsRemoved)
		}
	}
}

func (m *Manager) every(d time.Duration, f func()) {
	defer m.wg.Done()
	if d <= 0 {
		d = time.Second
	}
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

func (m *Manager) flush() {
	for _, p := range m.unsorted() {
		if err := p.Log().MaybeFlush(); errors.Is(err, klog.ErrClosed) {
			continue // removed (deleted, moved, its dir failed) since the pass began
		} else if err != nil {
			p.checkStorage(err)
			m.logger.Error("flush failed", "partition", p.Topic, "id", p.ID, "err", err)
		}
	}
}

func (m *Manager) retention() {
	for _, p := range m.unsorted() {
		if n, err := p.Log().EnforceRetention(); errors.Is(err, klog.ErrClosed) {
			continue // removed since the pass began
		} else if err != nil {
			p.checkStorage(err)
			m.logger.Error("retention failed", "partition", p.Topic, "id", p.ID, "err", err)
		} else if n > 0 {
			m.logger.Info("deleted segments by retention", "topic", p.Topic, "partition", p.ID, "segments", n)
		}
	}
}

func (m *Manager) shrinkIsrs() {
	for _, p := range m.unsorted() {
		m.settleIsr(p)
		if st := p.shrinkCandidate(); st != nil {
			m.writeIsr(p, *st, "shrink")
		}
	}
}

// settleIsr reads back the store's state of a partition whose last ISR write
// ended without a known outcome (see Partition.isrUnsure).
func (m *Manager) settleIsr(p *Partition) {
	r, ok := m.cfg.Isr.(IsrReader)
	if !ok || p.unsureIsr() == nil {
		return
	}
	ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
	defer cancel()
	st, err := r.ReadIsr(ctx, TP{p.Topic, p.ID})
	if err != nil {
		m.logger.Warn("ISR outcome still unknown", "topic", p.Topic, "partition", p.ID, "err", err)
	} else {
		m.logger.Info("ISR read back", "topic", p.Topic, "partition", p.ID, "leader", st.Leader, "epoch", st.LeaderEpoch, "isr", st.ISR)
	}
	p.isrRead(st, err == nil)
}

// ExpandIsr writes an ISR expansion decided by ReadForFollower.
func (m *Manager) ExpandIsr(p *Partition, st State) { m.writeIsr(p, st, "expand") }

func (m *Manager) writeIsr(p *Partition, st State, why string) {
	if m.cfg.Isr == nil {
		p.isrWritten(st, false)
		return
	}
	ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
	defer cancel()
	v, err := m.cfg.Isr.WriteIsr(ctx, TP{p.Topic, p.ID}, st)
	if err != nil {
		m.logger.Warn("ISR update not written", "topic", p.Topic, "partition", p.ID, "change", why, "isr", st.ISR, "err", err)
		p.isrWritten(st, false)
		return
	}
	st.ZkVersion = v
	if m.cfg.OnIsrChange != nil {
		m.cfg.OnIsrChange(why == "shrink")
	}
	m.logger.Info("ISR changed", "topic", p.Topic, "partition", p.ID, "change", why, "isr", st.ISR)
	p.isrWritten(st, true)
}

// Shutdown stops fetchers and background work and closes every log.
func (m *Manager) Shutdown() error {
	m.cancel()
	m.mu.Lock()
	fs := m.fetchers
	m.fetchers = map[int32]*fetcher{}
	m.mu.Unlock()
	for _, f := range fs {
		f.stop()
	}
	m.wg.Wait()
	// Logs close in parallel, as they open: each close fsyncs.
	parts := m.Partitions()
	var mu sync.Mutex
	var errs []error
	m.parallel(len(parts), func(i int) {
		if err := parts[i].Log().Close(); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	})
	return errors.Join(errs...)
}
