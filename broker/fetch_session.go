package broker

// Fetch sessions (KIP-227). A client (consumer or follower) that sends a full
// fetch with session id 0 and epoch 0 gets a session: the broker keeps the
// partitions it asked for, with their fetch offsets, and the high watermark
// and log start offset it last answered for each. Its next fetches carry the
// session id and the next epoch and list only the partitions whose fetch
// fields changed (added or altered), plus forgotten ones; the answer lists
// only partitions with records, an error, or a new high watermark, last stable
// offset or log start offset. A follower of 3,000 partitions thus sends and gets a few
// partitions per fetch instead of all of them.
//
//   - id 0, epoch -1: a sessionless full fetch. id 0, epoch 0: a full fetch that
//     opens a session (answered with id 0 when none can be made). id N, epoch 0:
//     closes N and opens another; id N, epoch -1: closes N, sessionless.
//   - id N, epoch E > 0: incremental; FETCH_SESSION_ID_NOT_FOUND when N is not
//     cached (or belongs to another principal or replica), INVALID_FETCH_SESSION_EPOCH
//     when E is not the session's next epoch.
//
// The cache holds at most max.incremental.fetch.session.cache.slots sessions
// and fetchSessionMaxPartitions partitions over all of them, so clients that
// open sessions cannot exhaust memory. A new session may evict, as Kafka's
// FetchSessionCache does: the least recently used session idle for longer than
// min.incremental.fetch.session.eviction.ms; failing that, the least valuable
// of the sessions older than that (a consumer's before a follower's, then the
// smallest), if the new one is worth more; a follower's session may also evict
// a consumer's however young.

import (
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchSessionMaxPartitions bounds the partitions cached over every session
// (about 150 bytes each).
const fetchSessionMaxPartitions = 500_000

type sessionKey struct {
	topic     string
	partition int32
}

// sessionPart is one partition of a session: what the client last asked and
// what the broker last answered.
type sessionPart struct {
	fetchOffset, logStartOffset int64
	maxBytes                    int32
	currentLeaderEpoch          int32
	lastFetchedEpoch            int32
	// answered: hw, lso and start hold what the client was last told.
	answered       bool
	hw, lso, start int64
}

type fetchSession struct {
	id         int32
	privileged bool   // a follower's
	owner      string // principal and replica id that opened it
	created    time.Time

	// mu guards the partitions and the epoch.
	mu    sync.Mutex
	epoch int32 // the epoch the next incremental fetch must carry
	parts map[sessionKey]*sessionPart
	order []sessionKey // insertion order, read in this order

	// Guarded by the cache's mu.
	lastUsed time.Time
	counted  int // partitions the cache counts for it

	// waited: the session's last fetch was answered at its max wait, with
	// nothing to send (an idle follower's, every replica.fetch.wait.max.ms).
	waited atomic.Bool
}

// likelyToWait reports whether the fetch will probably park until its max
// wait, as the session's last one did: its first read then registers the
// fetch's waiter, so that parking needs no second read of every partition.
func (fc *fetchContext) likelyToWait() bool {
	return fc != nil && fc.sess != nil && fc.sess.waited.Load()
}

// answeredAtMaxWait records how the fetch was answered, for likelyToWait.
func (fc *fetchContext) answeredAtMaxWait(waited bool) {
	if fc != nil && fc.sess != nil {
		fc.sess.waited.Store(waited)
	}
}

type fetchSessionCache struct {
	mu       sync.Mutex
	slots    int
	eviction time.Duration
	maxParts int
	now      func() time.Time
	sessions map[int32]*fetchSession
	parts    int // partitions over every session
}

func newFetchSessionCache(slots int, eviction time.Duration) *fetchSessionCache {
	return &fetchSessionCache{slots: slots, eviction: eviction, maxParts: fetchSessionMaxPartitions,
		now: time.Now, sessions: map[int32]*fetchSession{}}
}

// fetchContext is how one fetch request is answered.
type fetchContext struct {
	// req is what is read: the request itself, or for a session every
	// partition of the session at the fetch offsets it holds.
	req *kmsg.FetchRequest
	// sess is the request's session (nil: sessionless); incremental answers
	// list only partitions that changed.
	sess        *fetchSession
	incremental bool
	listed      int // partitions the request itself listed
}

// id is the session id the answer carries.
func (fc *fetchContext) id() int32 {
	if fc == nil || fc.sess == nil {
		return 0
	}
	return fc.sess.id
}

// begin resolves the session of a fetch request. The error, if any, is the
// answer's top-level error.
func (c *fetchSessionCache) begin(req *kmsg.FetchRequest, owner string, privileged bool) (*fetchContext, error) {
	if req.GetVersion() < 7 {
		return &fetchContext{req: req}, nil
	}
	full := req.SessionEpoch == 0 || req.SessionEpoch == -1
	if full {
		if req.SessionID != 0 {
			c.remove(req.SessionID, owner)
		}
		fc := &fetchContext{req: req}
		if req.SessionEpoch == 0 {
			fc.sess = c.create(req, owner, privileged)
		}
		return fc, nil
	}
	c.mu.Lock()
	s, ok := c.sessions[req.SessionID]
	c.mu.Unlock()
	if !ok || s.owner != owner {
		return nil, kerr.FetchSessionIDNotFound
	}
	s.mu.Lock()
	if req.SessionEpoch != s.epoch {
		s.mu.Unlock()
		return nil, kerr.InvalidFetchSessionEpoch
	}
	// Added and altered partitions first, then the forgotten ones, as Kafka.
	s.update(req)
	for _, t := range req.ForgottenTopics {
		for _, p := range t.Partitions {
			delete(s.parts, sessionKey{t.Topic, p})
		}
	}
	if len(s.parts) != len(s.order) {
		kept := s.order[:0]
		for _, k := range s.order {
			if _, ok := s.parts[k]; ok {
				kept = append(kept, k)
			}
		}
		s.order = kept
	}
	size := len(s.parts)
	s.epoch = nextSessionEpoch(s.epoch)
	read := s.request(req)
	s.mu.Unlock()
	if !c.touch(s, size) {
		// Gone, or over the cache's bound: the client starts again with a full
		// fetch (which then finds no room and goes sessionless).
		c.remove(s.id, owner)
		return nil, kerr.FetchSessionIDNotFound
	}
	return &fetchContext{req: read, sess: s, incremental: true}, nil
}

// touch marks a session used and accounts for its new size; false when it
// was evicted meanwhile or the cache cannot hold it.
func (c *fetchSessionCache) touch(s *fetchSession, size int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sessions[s.id] != s {
		return false
	}
	if size > s.counted && c.parts+size-s.counted > c.maxParts {
		return false
	}
	c.parts += size - s.counted
	s.counted = size
	s.lastUsed = c.now()
	return true
}

func nextSessionEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

// update applies a request's partitions to the session (s.mu held).
func (s *fetchSession) update(req *kmsg.FetchRequest) {
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			k := sessionKey{t.Topic, p.Partition}
			sp, ok := s.parts[k]
			if !ok {
				k.topic = strings.Clone(t.Topic) // not the request's buffer
				sp = &sessionPart{}
				s.parts[k] = sp
				s.order = append(s.order, k)
			}
			sp.fetchOffset, sp.logStartOffset = p.FetchOffset, p.LogStartOffset
			sp.maxBytes, sp.currentLeaderEpoch, sp.lastFetchedEpoch = p.PartitionMaxBytes, p.CurrentLeaderEpoch, p.LastFetchedEpoch
		}
	}
}

// request is req reading every partition of the session (s.mu held).
func (s *fetchSession) request(req *kmsg.FetchRequest) *kmsg.FetchRequest {
	out := *req
	out.Topics = nil
	out.ForgottenTopics = nil
	for _, k := range s.order {
		sp := s.parts[k]
		if n := len(out.Topics); n == 0 || out.Topics[n-1].Topic != k.topic {
			t := kmsg.NewFetchRequestTopic()
			t.Topic = k.topic
			out.Topics = append(out.Topics, t)
		}
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition = k.partition
		p.FetchOffset, p.LogStartOffset = sp.fetchOffset, sp.logStartOffset
		p.PartitionMaxBytes, p.CurrentLeaderEpoch, p.LastFetchedEpoch = sp.maxBytes, sp.currentLeaderEpoch, sp.lastFetchedEpoch
		t := &out.Topics[len(out.Topics)-1]
		t.Partitions = append(t.Partitions, p)
	}
	return &out
}

// create opens a session for a full fetch, or returns nil when the cache has
// no room for it.
func (c *fetchSessionCache) create(req *kmsg.FetchRequest, owner string, privileged bool) *fetchSession {
	now := c.now()
	s := &fetchSession{privileged: privileged, owner: owner, epoch: 1, created: now, lastUsed: now,
		parts: map[sessionKey]*sessionPart{}}
	s.update(req)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.slots <= 0 || len(s.parts) > c.maxParts {
		return nil
	}
	for len(c.sessions) >= c.slots || c.parts+len(s.parts) > c.maxParts {
		if !c.evictLocked(s, now) {
			return nil
		}
	}
	for {
		s.id = rand.Int32N(math.MaxInt32) + 1
		if _, taken := c.sessions[s.id]; !taken {
			break
		}
	}
	s.counted = len(s.parts)
	c.sessions[s.id] = s
	c.parts += s.counted
	return s
}

// evictLocked makes room for s: see the file's comment. False when nothing
// may be evicted for it.
func (c *fetchSessionCache) evictLocked(s *fetchSession, now time.Time) bool {
	var stale, least *fetchSession
	for _, o := range c.sessions {
		if now.Sub(o.lastUsed) > c.eviction && (stale == nil || o.lastUsed.Before(stale.lastUsed)) {
			stale = o
		}
		old := now.Sub(o.created) > c.eviction
		if !old && !(s.privileged && !o.privileged) {
			continue
		}
		if least == nil || worth(o) < worth(least) || worth(o) == worth(least) && o.id < least.id {
			least = o
		}
	}
	victim := stale
	if victim == nil && least != nil && worthOf(s.privileged, len(s.parts)) > worth(least) {
		victim = least
	}
	if victim == nil {
		return false
	}
	c.parts -= victim.counted
	delete(c.sessions, victim.id)
	return true
}

// worth orders sessions by value: every follower's above every consumer's,
// then by size.
func worth(s *fetchSession) int64 { return worthOf(s.privileged, s.counted) }

func worthOf(privileged bool, size int) int64 {
	if privileged {
		return 1<<40 + int64(size)
	}
	return int64(size)
}

// size is the number of sessions and of partitions they hold.
func (c *fetchSessionCache) size() (sessions, partitions int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions), c.parts
}

// remove closes session id if owner opened it.
func (c *fetchSessionCache) remove(id int32, owner string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.sessions[id]; ok && s.owner == owner {
		c.parts -= s.counted
		delete(c.sessions, id)
	}
}

// answer picks the partitions an answer lists: all of them for a full fetch,
// for an incremental one those with records, an error or a new high watermark,
// last stable offset or log start offset. Either way the session remembers
// what it told.
func (fc *fetchContext) answer(parts []fetchPart) []fetchPart {
	if fc == nil || fc.sess == nil {
		return parts
	}
	s := fc.sess
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []fetchPart
	for _, p := range parts {
		sp, ok := s.parts[sessionKey{p.topic, p.partition}]
		changed := !ok || !sp.answered || sp.hw != p.info.HighWatermark || sp.lso != p.info.LastStableOffset ||
			sp.start != p.info.LogStartOffset
		if ok {
			sp.answered, sp.hw, sp.lso, sp.start = true, p.info.HighWatermark, p.info.LastStableOffset, p.info.LogStartOffset
		}
		if !fc.incremental || p.region.Len > 0 || p.err != nil || changed {
			out = append(out, p)
		} else {
			p.region.Release()
		}
	}
	return out
}
