package replica

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
)

// FetcherConfig holds the replica.fetch.* settings.
type FetcherConfig struct {
	MaxWait          time.Duration // replica.fetch.wait.max.ms
	MaxBytes         int32         // replica.fetch.response.max.bytes
	PartitionMaxByte int32         // replica.fetch.max.bytes
	Backoff          time.Duration // replica.fetch.backoff.ms
	// Dial connects to a leader's inter-broker listener (TLS, SASL); nil dials TCP.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// Throttle, if set, holds back throttled replicas (throttle.go).
	Throttle FollowerThrottle
}

// fetcher pulls every partition this broker follows from one leader, like a
// consumer, and appends what it gets to the local logs.
type fetcher struct {
	m      *Manager
	leader int32
	client *protocol.Client
	logger *slog.Logger

	// mu guards parts and is held while a response is applied, so a partition
	// removed from this fetcher (its leader changed) never gets a stale answer
	// from the old leader appended after the removal.
	mu    sync.Mutex
	parts map[TP]*fetchState
	kick  chan struct{}

	cancel context.CancelFunc
	done   chan struct{}

	// sess is the fetch session (KIP-227) with the leader; only run uses it.
	sess fetchSession
}

// fetchSession is the follower's side of a fetch session: the leader holds
// the partitions of sent at those fetch fields, so a fetch lists only
// partitions whose fields changed and those to forget.
type fetchSession struct {
	id, epoch int32 // id 0: none; the next fetch is full and opens one
	sent      map[TP]sentPart
}

type sentPart struct {
	fetchOffset, logStartOffset int64
	maxBytes, leaderEpoch       int32
}

func (s *fetchSession) reset() { *s = fetchSession{} }

type fetchState struct {
	p          *Partition
	epoch      int32     // the leader epoch this broker follows the leader at
	truncate   bool      // reconcile with the leader (OffsetForLeaderEpoch) before fetching
	askEpoch   *int32    // epoch to ask about in the next round (KIP-279); nil: our latest
	delayUntil time.Time // after an error, wait replica.fetch.backoff.ms before fetching it again
}

func (m *Manager) addToFetcher(leader int32, addr string, p *Partition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.fetchers[leader]
	var moved []*fetchState
	if ok && f.client.Addr != addr {
		// The leader moved to another address: its partitions go to the new
		// fetcher and reconcile again.
		f.mu.Lock()
		for _, st := range f.parts {
			moved = append(moved, &fetchState{p: st.p, epoch: st.epoch, truncate: true})
		}
		f.parts = map[TP]*fetchState{}
		f.mu.Unlock()
		go f.stop()
		ok = false
	}
	if !ok {
		ctx, cancel := context.WithCancel(m.ctx)
		f = &fetcher{
			m: m, leader: leader, logger: m.logger.With("fetcher_leader", leader),
			client: &protocol.Client{Addr: addr, ClientID: "ktool-replica-fetcher", Dial: m.cfg.Fetch.Dial},
			parts:  map[TP]*fetchState{}, kick: make(chan struct{}, 1),
			cancel: cancel, done: make(chan struct{}),
		}
		m.fetchers[leader] = f
		go f.run(ctx)
	}
	f.mu.Lock()
	for _, st := range moved {
		f.parts[TP{st.p.Topic, st.p.ID}] = st
	}
	f.parts[TP{p.Topic, p.ID}] = &fetchState{p: p, epoch: p.State().LeaderEpoch, truncate: true}
	f.mu.Unlock()
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

func (m *Manager) removeFromFetchers(tp TP) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, f := range m.fetchers {
		f.mu.Lock()
		delete(f.parts, tp)
		empty := len(f.parts) == 0
		f.mu.Unlock()
		if empty {
			delete(m.fetchers, id)
			go f.stop()
		}
	}
}

func (f *fetcher) stop() {
	f.cancel()
	<-f.done
	f.client.Close()
}

func (f *fetcher) snapshot() map[TP]*fetchState {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[TP]*fetchState, len(f.parts))
	for k, v := range f.parts {
		out[k] = v
	}
	return out
}

func (f *fetcher) run(ctx context.Context) {
	defer close(f.done)
	cfg := f.m.cfg.Fetch
	for ctx.Err() == nil {
		parts := f.snapshot()
		if len(parts) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-f.kick:
				continue
			}
		}
		if err := f.reconcile(ctx, parts); err != nil {
			f.backoff(ctx, cfg.Backoff, err)
			continue
		}
		fetched, err := f.fetchOnce(ctx, parts)
		if err != nil {
			f.backoff(ctx, cfg.Backoff, err)
		} else if !fetched {
			// Every partition still waits to be reconciled with its leader (which
			// may not know its new epoch yet): do not spin.
			f.backoff(ctx, cfg.Backoff, errors.New("no partition ready to fetch"))
		}
	}
}

func (f *fetcher) backoff(ctx context.Context, d time.Duration, err error) {
	if ctx.Err() != nil {
		return
	}
	f.logger.Debug("replica fetch failed", "err", err)
	if d <= 0 {
		d = time.Second
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-f.kick:
	}
}

// reconcile truncates new followers to the point where their log agrees with the
// leader's, using leader epochs (KIP-101, KIP-279).
func (f *fetcher) reconcile(ctx context.Context, parts map[TP]*fetchState) error {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.SetVersion(3)
	req.ReplicaID = f.m.cfg.BrokerID
	idx := map[string]int{}
	need := map[TP]*fetchState{}
	f.mu.Lock()
	for tp, st := range parts {
		if !st.truncate {
			continue
		}
		need[tp] = st
		i, ok := idx[tp.Topic]
		if !ok {
			t := kmsg.NewOffsetForLeaderEpochRequestTopic()
			t.Topic = tp.Topic
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			idx[tp.Topic] = i
		}
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition = tp.Partition
		rp.CurrentLeaderEpoch = st.epoch
		rp.LeaderEpoch = st.p.Log().LatestEpoch()
		if st.askEpoch != nil {
			rp.LeaderEpoch = *st.askEpoch
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	f.mu.Unlock()
	if len(need) == 0 {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	raw, err := f.client.Request(rctx, req)
	if err != nil {
		return err
	}
	resp := raw.(*kmsg.OffsetForLeaderEpochResponse)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			tp := TP{t.Topic, rp.Partition}
			st, ok := need[tp]
			if !ok || f.parts[tp] != st {
				continue // no longer ours: the leader changed meanwhile
			}
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				f.logger.Debug("OffsetForLeaderEpoch refused", "partition", tp.String(), "err", err)
				continue
			}
			// Where our log stops agreeing with the leader's (Kafka's
			// getOffsetTruncationState, KIP-101 and KIP-279).
			l := st.p.Log()
			leo := l.LogEndOffset()
			target, done := leo, true
			switch {
			case rp.LeaderEpoch < 0 || rp.EndOffset < 0:
				// The leader knows no epoch at or below ours: keep what is committed.
				target = min(l.HighWatermark(), leo)
			default:
				ourEpoch, ourEnd := l.EndOffsetForEpoch(rp.LeaderEpoch)
				switch {
				case ourEpoch < 0:
					target = min(rp.EndOffset, leo)
				case ourEpoch != rp.LeaderEpoch:
					// We never saw the leader's epoch: cut back to where our
					// epoch below it ends and ask again about that epoch.
					target, done = min(ourEnd, leo), false
					e := ourEpoch
					st.askEpoch = &e
				default:
					target = min(rp.EndOffset, ourEnd, leo)
				}
			}
			if target < leo {
				f.logger.Info("truncating follower log", "partition", tp.String(), "from", leo, "to", target)
				if err := st.p.truncateFetched(f.leader, st.epoch, target); errors.Is(err, errNotFollowing) {
					continue // its role or epoch changed meanwhile: a new reconciliation follows
				} else if err != nil {
					return err
				}
			}
			st.truncate = !done
			if done {
				st.askEpoch = nil
			}
		}
	}
	return nil
}

func (f *fetcher) fetchOnce(ctx context.Context, parts map[TP]*fetchState) (bool, error) {
	cfg := f.m.cfg.Fetch
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.ReplicaID = f.m.cfg.BrokerID
	req.MaxWaitMillis = int32(cfg.MaxWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = cfg.MaxBytes
	req.SessionID, req.SessionEpoch = f.sess.id, f.sess.epoch
	full := f.sess.id == 0
	wanted := make(map[TP]sentPart, len(parts)) // growing it each round showed in an idle follower's profile
	now := time.Now()
	f.mu.Lock()
	for tp, st := range parts {
		if st.truncate || now.Before(st.delayUntil) || f.throttleHold(tp, st) {
			continue
		}
		wanted[tp] = sentPart{fetchOffset: st.p.Log().LogEndOffset(), logStartOffset: st.p.Log().LogStartOffset(),
			maxBytes: cfg.PartitionMaxByte, leaderEpoch: st.epoch}
	}
	f.mu.Unlock()
	if len(wanted) == 0 {
		return false, nil
	}
	idx := map[string]int{}
	for tp, w := range wanted {
		if sent, ok := f.sess.sent[tp]; !full && ok && sent == w {
			continue // the leader's session has it as it is
		}
		i, ok := idx[tp.Topic]
		if !ok {
			t := kmsg.NewFetchRequestTopic()
			t.Topic = tp.Topic
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			idx[tp.Topic] = i
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = tp.Partition
		rp.CurrentLeaderEpoch = w.leaderEpoch
		rp.FetchOffset = w.fetchOffset
		rp.LogStartOffset = w.logStartOffset
		rp.PartitionMaxBytes = w.maxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	if !full {
		forgotten := map[string]int{}
		for tp := range f.sess.sent {
			if _, ok := wanted[tp]; ok {
				continue
			}
			i, ok := forgotten[tp.Topic]
			if !ok {
				t := kmsg.NewFetchRequestForgottenTopic()
				t.Topic = tp.Topic
				req.ForgottenTopics = append(req.ForgottenTopics, t)
				i = len(req.ForgottenTopics) - 1
				forgotten[tp.Topic] = i
			}
			req.ForgottenTopics[i].Partitions = append(req.ForgottenTopics[i].Partitions, tp.Partition)
		}
	}
	rctx, cancel := context.WithTimeout(ctx, cfg.MaxWait+30*time.Second)
	defer cancel()
	raw, err := f.client.Request(rctx, req)
	if err != nil {
		f.sess.reset()
		return false, err
	}
	resp := raw.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		// FETCH_SESSION_ID_NOT_FOUND (evicted, or the leader restarted),
		// INVALID_FETCH_SESSION_EPOCH or anything else: start a new session.
		f.sess.reset()
		if errors.Is(err, kerr.FetchSessionIDNotFound) || errors.Is(err, kerr.InvalidFetchSessionEpoch) {
			f.logger.Debug("fetch session lost; opening another", "err", err)
			return true, nil
		}
		return false, err
	}
	switch {
	case full && resp.SessionID != 0:
		f.sess = fetchSession{id: resp.SessionID, epoch: 1, sent: wanted}
	case full:
		f.sess.reset() // the leader has no room: full fetches, asking again each time
	default:
		f.sess.epoch = nextEpoch(f.sess.epoch)
		f.sess.sent = wanted
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			tp := TP{t.Topic, rp.Partition}
			st, ok := parts[tp]
			w, wasAsked := wanted[tp]
			// Apply only an answer to the question still open: the partition is
			// still ours, not being reconciled, and its log has not moved (as
			// Kafka's fetcher checks before processing a response). The
			// partition checks its role and leader epoch itself as it applies.
			if !ok || !wasAsked || f.parts[tp] != st || st.truncate || st.p.Log().LogEndOffset() != w.fetchOffset {
				continue
			}
			f.throttleRecord(tp, st, rp)
			f.handlePartition(st, rp)
		}
	}
	return true, nil
}

// nextEpoch is the session epoch after e (it wraps to 1, 0 being "open").
func nextEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

func (f *fetcher) handlePartition(st *fetchState, rp kmsg.FetchResponseTopicPartition) {
	l := st.p.Log()
	err := kerr.ErrorForCode(rp.ErrorCode)
	switch {
	case err == nil:
		err := st.p.appendFetched(f.leader, st.epoch, rp.RecordBatches, rp.HighWatermark, rp.LogStartOffset)
		switch {
		case errors.Is(err, errNotFollowing):
			f.logger.Debug("fetched records dropped", "topic", st.p.Topic, "partition", st.p.ID, "leader_epoch", st.epoch, "err", err)
		case err != nil:
			f.logger.Error("appending fetched records", "topic", st.p.Topic, "partition", st.p.ID, "err", err)
			st.truncate = true
		}
	case errors.Is(err, kerr.OffsetOutOfRange):
		// Our LEO is outside the leader's log: below its start (retention) or above its end
		// (it lost data we had, e.g. after an unclean election).
		if rp.LogStartOffset > l.LogEndOffset() {
			if err := st.p.restartFetched(f.leader, st.epoch, rp.LogStartOffset); err != nil && !errors.Is(err, errNotFollowing) {
				f.logger.Error("resetting follower log", "err", err)
			}
		} else {
			st.truncate = true
		}
	default:
		// NOT_LEADER, FENCED/UNKNOWN_LEADER_EPOCH...: wait for the controller's
		// next word, without asking the leader again at once.
		st.delayUntil = time.Now().Add(max(f.m.cfg.Fetch.Backoff, 10*time.Millisecond))
		f.logger.Debug("fetch partition error", "topic", st.p.Topic, "partition", st.p.ID, "err", err)
	}
}
