package txn

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/internal/batch"
)

// Log is the coordinator's access to the __transaction_state partitions this
// broker leads.
type Log interface {
	// Append appends one batch to partition and returns once the ISR has it
	// (acks=all, refused below min.insync.replicas).
	Append(ctx context.Context, partition int32, batch []byte) error
	// Scan calls fn with every batch of partition, log start to log end.
	Scan(ctx context.Context, partition int32, fn func([]byte) error) error
}

// MarkerSet is the marker one ended transaction has every partition append.
type MarkerSet struct {
	TransactionalID  string
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	Commit           bool
	Partitions       []TP
}

// Markers has the partition leaders append transaction markers.
type Markers interface {
	// Write returns once every partition's leader acknowledged the marker
	// (partitions of deleted topics excepted), retrying meanwhile; ErrFenced
	// when a leader knows a newer coordinator; ctx's error when it ends.
	Write(ctx context.Context, m MarkerSet) error
}

// ErrFenced means a partition leader saw markers from a newer coordinator
// (TRANSACTION_COORDINATOR_FENCED or a newer producer epoch): this one stops.
var ErrFenced = errors.New("transaction coordinator fenced by a newer one")

// Config configures a Coordinator.
type Config struct {
	NumPartitions int32
	Log           Log
	Markers       Markers
	// NextProducerID allocates a producer id (the broker's id blocks).
	NextProducerID func(context.Context) (int64, error)
	Codecs         batch.Codecs
	// MaxTimeout is transaction.max.timeout.ms.
	MaxTimeout time.Duration
	// IDExpiration is transactional.id.expiration.ms.
	IDExpiration time.Duration
	// AbortInterval is transaction.abort.timed.out.transaction.cleanup.interval.ms.
	AbortInterval time.Duration
	// ExpireInterval is transaction.remove.expired.transaction.cleanup.interval.ms.
	ExpireInterval time.Duration
	Logger         *slog.Logger
	Now            func() time.Time
}

// Coordinator is the transaction coordinator of one broker.
type Coordinator struct {
	cfg    Config
	logger *slog.Logger
	shards []*shard
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New starts a coordinator leading no partition yet.
func New(cfg Config) *Coordinator {
	if cfg.NumPartitions < 1 {
		cfg.NumPartitions = 1
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Coordinator{cfg: cfg, logger: cfg.Logger}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.shards = make([]*shard, cfg.NumPartitions)
	for i := range c.shards {
		c.shards[i] = &shard{c: c, id: int32(i)}
	}
	c.wg.Add(2)
	go c.every(cfg.AbortInterval, c.abortTimedOut)
	go c.every(cfg.ExpireInterval, c.expireIDs)
	return c
}

// PartitionFor is the __transaction_state partition of transactional id id,
// as Kafka computes it: Utils.abs(id.hashCode) % partitions.
func (c *Coordinator) PartitionFor(id string) int32 { return partitionFor(id, c.cfg.NumPartitions) }

func partitionFor(id string, n int32) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(id)) {
		h = 31*h + int32(u)
	}
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % n
}

func (c *Coordinator) shardFor(id string) *shard { return c.shards[c.PartitionFor(id)] }

func (c *Coordinator) nowMs() int64 { return c.cfg.Now().UnixMilli() }

// BecomeLeader tells the coordinator that this broker leads partition p at
// leader epoch e (the coordinator epoch of its markers): the partition's
// transactions load in the background, and those found in a Prepare state
// get their markers sent again.
func (c *Coordinator) BecomeLeader(p, e int32) {
	if p < 0 || int(p) >= len(c.shards) {
		c.logger.Warn("transaction coordinator: leader of an unknown __transaction_state partition", "partition", p)
		return
	}
	s := c.shards[p]
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.ctx.Err() != nil {
		return
	}
	if s.status != idle {
		s.epoch = max(s.epoch, e)
		return
	}
	s.status, s.epoch = loading, e
	s.term++
	s.ctx, s.cancel = context.WithCancel(c.ctx)
	c.wg.Add(1)
	go s.load(s.ctx, s.term)
}

// Resign unloads partition p: its requests are answered NOT_COORDINATOR and
// its marker sending stops (the next coordinator resends).
func (c *Coordinator) Resign(p int32) {
	if p < 0 || int(p) >= len(c.shards) {
		return
	}
	c.shards[p].resign()
}

// Close resigns every partition and waits for the coordinator's goroutines.
func (c *Coordinator) Close() {
	c.cancel()
	for _, s := range c.shards {
		s.resign()
	}
	c.wg.Wait()
}

func (c *Coordinator) every(d time.Duration, f func()) {
	defer c.wg.Done()
	if d <= 0 {
		return
	}
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

type status int8

const (
	idle status = iota
	loading
	active
)

// shard is one __transaction_state partition's transactions.
type shard struct {
	c  *Coordinator
	id int32
	// appendMu is held (read) by each log write from its term check to its
	// end, and (write) by a load before it scans, so a load never misses a
	// write its term allowed.
	appendMu sync.RWMutex

	mu     sync.Mutex
	status status
	epoch  int32
	term   uint64
	ctx    context.Context
	cancel context.CancelFunc
	txns   map[string]*entry
}

// entry is a transactional id's state and its transition in flight.
type entry struct {
	m Metadata
	// pending: a transition's record is being written (or its markers sent);
	// pendingState is the state it leads to.
	pending      bool
	pendingState State
}

func (s *shard) servable() error {
	switch s.status {
	case loading:
		return kerr.CoordinatorLoadInProgress
	case active:
		return nil
	}
	return kerr.NotCoordinator
}

func (s *shard) resign() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status == idle {
		return
	}
	s.status = idle
	s.term++
	s.cancel()
	s.txns = nil
}

func (s *shard) load(ctx context.Context, term uint64) {
	defer s.c.wg.Done()
	// Wait for the writes an older term let start, so the scan sees them.
	s.appendMu.Lock()
	s.appendMu.Unlock()
	start := time.Now()
	var txns map[string]Metadata
	bad, skipped := 0, 0
	backoff := 100 * time.Millisecond
	for {
		txns, bad, skipped = map[string]Metadata{}, 0, 0
		err := s.c.cfg.Log.Scan(ctx, s.id, func(b []byte) error {
			if err := readBatch(ctx, s.c.cfg.Codecs, b, func(key, value []byte) error {
				id, err := DecodeKey(key)
				if errors.Is(err, errUnknownVersion) {
					skipped++
					return nil
				}
				if err != nil {
					bad++
					return nil
				}
				if value == nil {
					delete(txns, id)
					return nil
				}
				m, err := DecodeValue(id, value)
				if err != nil {
					bad++
					return nil
				}
				txns[id] = m
				return nil
			}); err != nil {
				bad++
			}
			return ctx.Err()
		})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		s.c.logger.Warn("transaction coordinator: loading __transaction_state failed; retrying",
			"partition", s.id, "error", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
	var resume []string
	s.mu.Lock()
	if s.term != term {
		s.mu.Unlock()
		return
	}
	s.txns = make(map[string]*entry, len(txns))
	for id, m := range txns {
		e := &entry{m: m}
		switch m.State {
		case Dead:
			continue
		case PrepareEpochFence:
			e.m.State = PrepareAbort
		}
		if e.m.State == PrepareCommit || e.m.State == PrepareAbort {
			e.pending, e.pendingState = true, complete(e.m, 0).State
			resume = append(resume, id)
		}
		s.txns[id] = e
	}
	s.status = active
	for _, id := range resume {
		s.c.wg.Add(1)
		go s.finish(term, id)
	}
	s.mu.Unlock()
	if bad > 0 {
		s.c.logger.Warn("transaction coordinator: skipped unreadable __transaction_state data", "partition", s.id, "records", bad)
	}
	s.c.logger.Info("transaction coordinator: loaded __transaction_state partition", "partition", s.id,
		"transactional_ids", len(txns), "resumed", len(resume), "skipped", skipped, "took", time.Since(start))
}

// write appends m (or a tombstone of id when m is nil) for term, with
// Kafka's mapping of log errors to coordinator errors.
func (s *shard) write(term uint64, id string, m *Metadata) error {
	s.appendMu.RLock()
	defer s.appendMu.RUnlock()
	s.mu.Lock()
	if s.term != term || s.status == idle {
		s.mu.Unlock()
		return kerr.NotCoordinator
	}
	ctx := s.ctx
	s.mu.Unlock()
	rec := record{key: EncodeKey(id)}
	if m != nil {
		rec.value = EncodeValue(*m)
	}
	err := s.c.cfg.Log.Append(ctx, s.id, buildBatch([]record{rec}, s.c.cfg.Now()))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kerr.NotLeaderForPartition), errors.Is(err, kerr.KafkaStorageError), errors.Is(err, context.Canceled):
		return kerr.NotCoordinator
	case errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.NotEnoughReplicas),
		errors.Is(err, kerr.NotEnoughReplicasAfterAppend), errors.Is(err, kerr.RequestTimedOut),
		errors.Is(err, context.DeadlineExceeded):
		return kerr.CoordinatorNotAvailable
	}
	s.c.logger.Warn("transaction coordinator: writing __transaction_state failed", "partition", s.id, "transactional_id", id, "error", err)
	return kerr.UnknownServerError
}

// transit writes e's next metadata and applies it; e must be pending for
// term. A failed write leaves the old metadata (and clears pending unless keep).
func (s *shard) transit(term uint64, id string, next Metadata, keep bool) error {
	err := s.write(term, id, &next)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.txns[id]
	if s.term != term || e == nil {
		return kerr.NotCoordinator
	}
	if err != nil {
		e.pending = false
		return err
	}
	e.m = next
	e.pending = keep
	return nil
}

// begin finds id's entry for a new transition, or the error that refuses it.
func (s *shard) begin(id string) (*entry, uint64, error) {
	if err := s.servable(); err != nil {
		return nil, 0, err
	}
	e := s.txns[id]
	if e == nil {
		return nil, 0, kerr.InvalidProducerIDMapping
	}
	return e, s.term, nil
}

// refuse is the error of a transition planned against e: a producer that is
// not the current one is told so first (as Kafka orders its checks), then a
// transition in flight is CONCURRENT_TRANSACTIONS.
func refuse(e *entry, planned *kerr.Error) error {
	if planned == kerr.InvalidProducerIDMapping || planned == kerr.ProducerFenced {
		return planned
	}
	if e.pending {
		return kerr.ConcurrentTransactions
	}
	if planned != nil {
		return planned
	}
	return nil
}

// InitProducerID serves InitProducerId with transactional id id.
func (c *Coordinator) InitProducerID(ctx context.Context, id string, r InitRequest) (int64, int16, error) {
	if r.TimeoutMs <= 0 || time.Duration(r.TimeoutMs)*time.Millisecond > c.cfg.MaxTimeout {
		return -1, -1, kerr.InvalidTransactionTimeout
	}
	s := c.shardFor(id)
	s.mu.Lock()
	if err := s.servable(); err != nil {
		s.mu.Unlock()
		return -1, -1, err
	}
	if s.txns[id] == nil {
		s.mu.Unlock()
		pid, err := c.cfg.NextProducerID(ctx)
		if err != nil {
			return -1, -1, err
		}
		s.mu.Lock()
		if err := s.servable(); err != nil {
			s.mu.Unlock()
			return -1, -1, err
		}
		if s.txns[id] == nil {
			s.txns[id] = &entry{m: newMetadata(id, pid, r.TimeoutMs, c.nowMs())}
		}
	}
	e, term, err := s.begin(id)
	if err == nil && e.pending {
		err = kerr.ConcurrentTransactions
	}
	if err != nil {
		s.mu.Unlock()
		return -1, -1, err
	}
	plan, kerrv := planInit(e.m, r, c.nowMs())
	if kerrv != nil {
		s.mu.Unlock()
		return -1, -1, kerrv
	}
	e.pending, e.pendingState = true, plan.next.State
	s.mu.Unlock()
	if plan.rotate {
		pid, err := c.cfg.NextProducerID(ctx)
		if err != nil {
			s.clearPending(term, id)
			return -1, -1, err
		}
		plan.next.ProducerID = pid
	}
	if err := s.transit(term, id, plan.next, plan.abort); err != nil {
		return -1, -1, err
	}
	if plan.abort {
		c.logger.Info("transaction coordinator: fencing the previous producer; aborting its ongoing transaction",
			"transactional_id", id, "producer_id", plan.next.ProducerID, "epoch", plan.next.Epoch)
		s.startFinish(term, id)
		return -1, -1, kerr.ConcurrentTransactions
	}
	return plan.next.ProducerID, plan.next.Epoch, nil
}

func (s *shard) clearPending(term uint64, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.txns[id]; s.term == term && e != nil {
		e.pending = false
	}
}

func (s *shard) startFinish(term uint64, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.term != term {
		return
	}
	s.c.wg.Add(1)
	go s.finish(term, id)
}

// AddPartitions serves AddPartitionsToTxn (and AddOffsetsToTxn, whose
// partition is the group's __consumer_offsets partition).
func (c *Coordinator) AddPartitions(ctx context.Context, id string, pid int64, epoch int16, tps []TP) error {
	s := c.shardFor(id)
	s.mu.Lock()
	e, term, err := s.begin(id)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	next, write, kerrv := planAdd(e.m, pid, epoch, tps, c.nowMs())
	if err := refuse(e, kerrv); err != nil || !write {
		s.mu.Unlock()
		return err
	}
	e.pending, e.pendingState = true, next.State
	s.mu.Unlock()
	return s.transit(term, id, next, false)
}

// Verify reports which of tps are not in the ongoing transaction of id with
// producer pid and epoch (AddPartitionsToTxn v4 VerifyOnly, KIP-890 part 1).
func (c *Coordinator) Verify(id string, pid int64, epoch int16, tps []TP) ([]TP, error) {
	s := c.shardFor(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.servable(); err != nil {
		return nil, err
	}
	e := s.txns[id]
	if e == nil {
		return nil, kerr.InvalidProducerIDMapping
	}
	if e.pending && (e.pendingState == PrepareCommit || e.pendingState == PrepareAbort) {
		return nil, kerr.ConcurrentTransactions
	}
	missing, kerrv := verify(e.m, pid, epoch, tps)
	if kerrv != nil {
		return nil, kerrv
	}
	return missing, nil
}

// EndTxn serves EndTxn: it writes PrepareCommit or PrepareAbort and returns;
// the markers and the Complete state follow in the background.
func (c *Coordinator) EndTxn(ctx context.Context, id string, pid int64, epoch int16, commit bool) error {
	s := c.shardFor(id)
	s.mu.Lock()
	e, term, err := s.begin(id)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	next, done, kerrv := planEnd(e.m, pid, epoch, commit, true, c.nowMs())
	if err := refuse(e, kerrv); err != nil || done {
		s.mu.Unlock()
		return err
	}
	e.pending, e.pendingState = true, next.State
	s.mu.Unlock()
	if err := s.transit(term, id, next, true); err != nil {
		return err
	}
	s.startFinish(term, id)
	return nil
}

// finish sends the markers of id's Prepare state, then writes its Complete
// state; it gives up only when the term ends or a newer coordinator fences it.
func (s *shard) finish(term uint64, id string) {
	defer s.c.wg.Done()
	backoff := 100 * time.Millisecond
	wait := func(ctx context.Context) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
		return true
	}
	for {
		s.mu.Lock()
		e := s.txns[id]
		if s.term != term || e == nil {
			s.mu.Unlock()
			return
		}
		m, ctx := e.m, s.ctx
		set := MarkerSet{TransactionalID: id, ProducerID: m.ProducerID, ProducerEpoch: m.Epoch, CoordinatorEpoch: s.epoch,
			Commit: m.State == PrepareCommit, Partitions: m.Partitions}
		s.mu.Unlock()
		err := s.c.cfg.Markers.Write(ctx, set)
		if err == nil {
			break
		}
		if errors.Is(err, ErrFenced) {
			s.c.logger.Warn("transaction coordinator: a newer coordinator owns the transaction; not completing it",
				"transactional_id", id, "producer_id", m.ProducerID, "epoch", m.Epoch)
			return
		}
		if ctx.Err() != nil {
			return
		}
		s.c.logger.Warn("transaction coordinator: writing markers failed; retrying", "transactional_id", id, "error", err)
		if !wait(ctx) {
			return
		}
	}
	for {
		s.mu.Lock()
		e := s.txns[id]
		if s.term != term || e == nil {
			s.mu.Unlock()
			return
		}
		next, ctx := complete(e.m, s.c.nowMs()), s.ctx
		s.mu.Unlock()
		err := s.write(term, id, &next)
		s.mu.Lock()
		e = s.txns[id]
		if s.term != term || e == nil {
			s.mu.Unlock()
			return
		}
		if err == nil {
			e.m, e.pending = next, false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		if errors.Is(err, kerr.NotCoordinator) {
			return
		}
		if !wait(ctx) {
			return
		}
	}
}

// abortTimedOut aborts, with a bumped epoch, every transaction that ran past
// its timeout, as Kafka does.
func (c *Coordinator) abortTimedOut() {
	now := c.nowMs()
	for _, s := range c.shards {
		type job struct {
			id   string
			next Metadata
		}
		var jobs []job
		s.mu.Lock()
		term := s.term
		if s.status == active {
			for id, e := range s.txns {
				if !e.pending && timedOut(e.m, now) {
					next := planTimeoutAbort(e.m, now)
					e.pending, e.pendingState = true, next.State
					jobs = append(jobs, job{id, next})
				}
			}
		}
		s.mu.Unlock()
		for _, j := range jobs {
			c.logger.Info("transaction coordinator: aborting a transaction past its timeout", "transactional_id", j.id,
				"producer_id", j.next.ProducerID, "epoch", j.next.Epoch)
			if err := s.transit(term, j.id, j.next, true); err != nil {
				continue
			}
			s.startFinish(term, j.id)
		}
	}
}

// expireIDs removes the transactional ids idle for longer than
// transactional.id.expiration.ms: a tombstone, then out of memory.
func (c *Coordinator) expireIDs() {
	now, exp := c.nowMs(), c.cfg.IDExpiration.Milliseconds()
	for _, s := range c.shards {
		var ids []string
		s.mu.Lock()
		term := s.term
		if s.status == active {
			for id, e := range s.txns {
				if !e.pending && expired(e.m, now, exp) {
					e.pending, e.pendingState = true, Dead
					ids = append(ids, id)
				}
			}
		}
		s.mu.Unlock()
		for _, id := range ids {
			err := s.write(term, id, nil)
			s.mu.Lock()
			if e := s.txns[id]; s.term == term && e != nil {
				if err == nil {
					delete(s.txns, id)
				} else {
					e.pending = false
				}
			}
			s.mu.Unlock()
			if err == nil {
				c.logger.Info("transaction coordinator: expired an idle transactional id", "transactional_id", id)
			}
		}
	}
}

// Described is one transactional id's state as DescribeTransactions shows it.
type Described struct {
	Metadata
	Err error // NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or TRANSACTIONAL_ID_NOT_FOUND
}

// Describe returns the state of each id.
func (c *Coordinator) Describe(ids []string) []Described {
	out := make([]Described, 0, len(ids))
	for _, id := range ids {
		s := c.shardFor(id)
		s.mu.Lock()
		d := Described{Metadata: Metadata{ID: id, ProducerID: -1, Epoch: -1}}
		if err := s.servable(); err != nil {
			d.Err = err
		} else if e := s.txns[id]; e == nil {
			d.Err = kerr.TransactionalIDNotFound
		} else {
			d.Metadata = e.m
			d.Partitions = slices.Clone(e.m.Partitions)
		}
		s.mu.Unlock()
		out = append(out, d)
	}
	return out
}

// List returns the transactions of the partitions this broker leads, in the
// given states (all when empty) of the given producers (all when empty);
// COORDINATOR_LOAD_IN_PROGRESS while a partition loads, as Kafka.
func (c *Coordinator) List(states []State, pids []int64) ([]Metadata, error) {
	var out []Metadata
	for _, s := range c.shards {
		s.mu.Lock()
		if s.status == loading {
			s.mu.Unlock()
			return nil, kerr.CoordinatorLoadInProgress
		}
		for _, e := range s.txns {
			if (len(states) == 0 || slices.Contains(states, e.m.State)) && (len(pids) == 0 || slices.Contains(pids, e.m.ProducerID)) {
				out = append(out, e.m)
			}
		}
		s.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b Metadata) int {
		if a.ID < b.ID {
			return -1
		}
		if a.ID > b.ID {
			return 1
		}
		return 0
	})
	return out, nil
}
