package group

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/batch"
)

type shardStatus int8

const (
	shardIdle shardStatus = iota // not the leader
	shardLoading
	shardActive
)

// shard is one __consumer_offsets partition's groups.
type shard struct {
	c  *Coordinator
	id int32

	mu     sync.Mutex
	status shardStatus
	epoch  int32
	// term changes at every BecomeLeader and Resign; goroutines, timers and
	// append completions of an older term find it changed and do nothing.
	term   uint64
	cancel context.CancelFunc
	groups map[string]*group
	w      *writer
	// txnGroups lists, by producer id, the groups holding its pending
	// transactional offset commits; lateTxn the markers reported while
	// loading (txn.go).
	txnGroups map[int64]map[string]bool
	lateTxn   []txnCompletion
}

// outbox collects answers made under the shard lock, sent once it is released
// so a respond callback can never run while the lock is held.
type outbox []func()

func (o *outbox) add(f func()) { *o = append(*o, f) }

// run calls fn under the shard lock, then sends what fn put in the outbox.
func (s *shard) run(fn func(out *outbox)) {
	var out outbox
	s.mu.Lock()
	fn(&out)
	s.mu.Unlock()
	for _, f := range out {
		f()
	}
}

// servable is the error code for a request to this shard's groups, 0 if it can be served.
func (s *shard) servable() int16 {
	switch s.status {
	case shardLoading:
		return kerr.CoordinatorLoadInProgress.Code
	case shardActive:
		return 0
	default:
		return kerr.NotCoordinator.Code
	}
}

// owns reports whether g is still this term's live group.
func (s *shard) owns(term uint64, g *group) bool {
	return s.term == term && s.status == shardActive && s.groups[g.id] == g
}

func (s *shard) now() time.Time { return s.c.now() }

// resign unloads the shard without waiting for its writer, which fails what it
// still holds once its append in flight returns.
func (s *shard) resign() {
	s.run(func(out *outbox) {
		if s.status == shardIdle {
			return
		}
		s.status = shardIdle
		s.term++
		s.cancel()
		for _, g := range s.groups {
			s.unload(out, g)
		}
		s.groups = nil
		s.w = nil
		s.txnGroups, s.lateTxn = nil, nil
	})
}

// unload drops a group this broker no longer coordinates, answering its waiters.
func (s *shard) unload(out *outbox, g *group) {
	s.stopJoinTimer(g)
	for id, t := range g.pending {
		t.Stop()
		delete(g.pending, id)
	}
	for _, m := range g.members {
		if m.hb != nil {
			m.hb.Stop()
		}
		s.answerJoin(out, g, m, joinError(m.id, kerr.NotCoordinator.Code))
		s.answerSync(out, m, syncResult{code: kerr.NotCoordinator.Code})
	}
	g.transition(stateDead, s.now())
}

// load reads the partition's groups and offsets, then starts serving them.
func (s *shard) load(ctx context.Context, term uint64) {
	defer s.c.wg.Done()
	start := s.now()
	var st *loadState
	backoff := 100 * time.Millisecond
	for {
		st = newLoadState()
		err := s.c.cfg.Log.Scan(ctx, s.id, func(b []byte) error {
			// A batch this coordinator cannot read is skipped, not fatal: failing
			// the load would leave every group of the partition unavailable.
			read := func() error { return readBatch(ctx, s.c.cfg.Codecs, b, st.apply) }
			if h, err := batch.ParseHeader(b); err == nil && h.Transactional() && h.ProducerID >= 0 {
				read = func() error { return st.applyTxnBatch(ctx, s.c.cfg.Codecs, b) }
			}
			if err := read(); err != nil {
				st.bad++
				st.lastErr = err
			}
			return ctx.Err()
		})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		s.c.logger.Warn("group coordinator: loading __consumer_offsets failed; retrying",
			"partition", s.id, "error", err, "retry_in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, 5*time.Second)
	}
	loaded, groups := false, 0
	s.run(func(out *outbox) {
		if s.term != term {
			return
		}
		loaded = true
		s.groups = st.build(s.now())
		s.txnGroups = nil
		s.installPending(st, s.lateTxn)
		s.lateTxn = nil
		s.status = shardActive
		s.w = newWriter(s, ctx)
		s.c.wg.Add(1)
		go s.w.run()
		for _, g := range s.groups {
			for _, m := range g.members {
				s.scheduleHeartbeat(g, m, m.sessionTimeout)
			}
			if limit := s.c.cfg.MaxGroupSize; limit > 0 && len(g.members) > limit {
				// group.max.size was lowered: rebalance, which sheds the excess.
				s.prepareRebalance(out, g)
			}
		}
		groups = len(s.groups)
	})
	if !loaded {
		return
	}
	if st.bad > 0 {
		s.c.logger.Warn("group coordinator: skipped unreadable __consumer_offsets data", "partition", s.id,
			"batches_or_records", st.bad, "last_error", st.lastErr)
	}
	s.c.logger.Info("group coordinator: loaded __consumer_offsets partition", "partition", s.id,
		"groups", groups, "skipped_records", st.skipped, "took", s.now().Sub(start))
}

// loadState replays __consumer_offsets records: the last record per key wins,
// a tombstone deletes.
type loadState struct {
	offsets map[string]map[topicPartition]offsetEntry
	meta    map[string]*kmsg.GroupMetadataValue
	// pending holds transactional commits awaiting their marker:
	// producer id -> group -> partition.
	pending map[int64]map[string]map[topicPartition]pendingOffset
	skipped int // records of kinds this coordinator does not know
	bad     int // batches or records that failed to decode
	lastErr error
}

func newLoadState() *loadState {
	return &loadState{offsets: map[string]map[topicPartition]offsetEntry{}, meta: map[string]*kmsg.GroupMetadataValue{},
		pending: map[int64]map[string]map[topicPartition]pendingOffset{}}
}

func (st *loadState) apply(_ int64, key, value []byte) error {
	r, err := parseRecord(key, value)
	if errors.Is(err, errUnknownKey) {
		st.skipped++
		return nil
	}
	if err != nil {
		st.bad++
		st.lastErr = err
		return nil
	}
	if r.isOffset {
		if r.offset == nil {
			delete(st.offsets[r.group], r.tp)
			return nil
		}
		m := st.offsets[r.group]
		if m == nil {
			m = map[topicPartition]offsetEntry{}
			st.offsets[r.group] = m
		}
		m[r.tp] = *r.offset
		return nil
	}
	if r.meta == nil {
		delete(st.meta, r.group)
		return nil
	}
	st.meta[r.group] = r.meta
	return nil
}

func (st *loadState) build(now time.Time) map[string]*group {
	groups := map[string]*group{}
	for id, v := range st.meta {
		g := newGroup(id, now)
		g.protocolType = v.ProtocolType
		g.generation = v.Generation
		if v.Protocol != nil {
			g.protocol = *v.Protocol
		}
		if v.Leader != nil {
			g.leader = *v.Leader
		}
		g.stateAt = -1
		if v.Version >= 2 && v.CurrentStateTimestamp >= 0 {
			g.stateAt = v.CurrentStateTimestamp
		}
		for _, vm := range v.Members {
			m := &member{
				id: vm.MemberID, instanceID: vm.InstanceID, clientID: vm.ClientID, clientHost: vm.ClientHost,
				sessionTimeout: time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
				protocolType:   g.protocolType,
				protocols:      []protocol{{name: g.protocol, metadata: vm.Subscription}},
				assignment:     vm.Assignment,
			}
			m.rebalanceTimeout = m.sessionTimeout
			if v.Version >= 1 && vm.RebalanceTimeoutMillis >= 0 {
				m.rebalanceTimeout = time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond
			}
			g.seq++
			m.seq = g.seq
			g.members[m.id] = m
			if m.instanceID != nil {
				g.static[*m.instanceID] = m.id
			}
		}
		if len(g.members) > 0 {
			g.state = stateStable
			if _, ok := g.members[g.leader]; !ok {
				g.leader = g.sortedMembers()[0].id
			}
		}
		g.computeSubscribed()
		groups[id] = g
	}
	for id, offs := range st.offsets {
		if len(offs) == 0 {
			continue
		}
		g := groups[id]
		if g == nil {
			g = newGroup(id, now)
			groups[id] = g
		}
		g.offsets = offs
	}
	return groups
}

// writeReq is records to append together with what to do once they are durable.
type writeReq struct {
	recs []record
	// producer, when set, makes recs a transactional batch of their own.
	producer *txnProducer
	done     func(base int64, err error)
}

// writer appends a shard's records in submission order, one append at a time,
// putting everything queued during an append into the next batch.
type writer struct {
	s     *shard
	ctx   context.Context
	mu    sync.Mutex
	queue []*writeReq
	wake  chan struct{}
}

// maxBatchBytes caps how much queued data one append carries, well below the
// offsets topic's max.message.bytes once record overhead is added; one request's
// records always go in one batch, whatever their size, and never share it with
// others when that would cross the cap (so one large commit cannot fail others).
const maxBatchBytes = 512 << 10

// recordOverhead is a generous bound on a record's framing around key and value.
const recordOverhead = 32

func newWriter(s *shard, ctx context.Context) *writer {
	return &writer{s: s, ctx: ctx, wake: make(chan struct{}, 1)}
}

func (w *writer) submit(r *writeReq) {
	w.mu.Lock()
	w.queue = append(w.queue, r)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *writer) take() []*writeReq {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, size := 0, 0
	for n < len(w.queue) {
		if w.queue[n].producer != nil {
			if n == 0 {
				n = 1
			}
			break
		}
		req := 0
		for _, r := range w.queue[n].recs {
			req += len(r.key) + len(r.value) + recordOverhead
		}
		if n > 0 && size+req > maxBatchBytes {
			break
		}
		size += req
		n++
	}
	out := w.queue[:n:n]
	w.queue = w.queue[n:]
	if len(w.queue) > 0 {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	return out
}

func (w *writer) run() {
	defer w.s.c.wg.Done()
	for {
		select {
		case <-w.ctx.Done():
			w.failQueued()
			return
		case <-w.wake:
		}
		reqs := w.take()
		if len(reqs) == 0 {
			continue
		}
		var recs []record
		for _, r := range reqs {
			recs = append(recs, r.recs...)
		}
		b := buildBatch(recs, w.s.now())
		if p := reqs[0].producer; p != nil {
			b = buildTxnBatch(recs, w.s.now(), *p)
		}
		base, err := w.s.c.cfg.Log.Append(w.ctx, w.s.id, b)
		if err != nil {
			w.s.c.logger.Warn("group coordinator: appending to __consumer_offsets failed",
				"partition", w.s.id, "records", len(recs), "error", err)
		}
		next := base
		for _, r := range reqs {
			r.done(next, err)
			next += int64(len(r.recs))
		}
	}
}

func (w *writer) failQueued() {
	w.mu.Lock()
	q := w.queue
	w.queue = nil
	w.mu.Unlock()
	for _, r := range q {
		r.done(-1, kerr.NotCoordinator)
	}
}

// appendRecords queues recs for the log. done runs under the shard lock once
// the append is durable or has failed; current says whether the shard is still
// in the same leadership term. Called with the shard lock held.
func (s *shard) appendRecords(out *outbox, recs []record, done func(out *outbox, current bool, err error)) {
	s.appendRecordsFor(out, recs, nil, func(out *outbox, current bool, _ int64, err error) { done(out, current, err) })
}

// appendRecordsFor is appendRecords for producer's transactional batch
// (producer nil: a plain one); done also gets the batch's base offset.
func (s *shard) appendRecordsFor(out *outbox, recs []record, producer *txnProducer, done func(out *outbox, current bool, base int64, err error)) {
	if s.w == nil {
		done(out, true, -1, kerr.NotCoordinator)
		return
	}
	term := s.term
	s.w.submit(&writeReq{recs: recs, producer: producer, done: func(base int64, err error) {
		s.run(func(out *outbox) { done(out, s.term == term, base, err) })
	}})
}
