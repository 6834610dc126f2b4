package protocol

import (
	"context"
	"net"
	"slices"
	"sync"
	"time"
)

// Limits bound what connections may hold, under Kafka's setting names. A zero
// field means "no limit" (or, for MaxPreAuthRequestSize, the default 524288).
type Limits struct {
	// MaxConnections (max.connections) is the number of open connections; one
	// more is closed as soon as it is accepted.
	MaxConnections int
	// MaxConnectionsPerIP (max.connections.per.ip) and its per-address
	// exceptions (max.connections.per.ip.overrides, keyed by IP string; an
	// override of 0 refuses that address).
	MaxConnectionsPerIP          int
	MaxConnectionsPerIPOverrides map[string]int
	// QueuedMaxRequestBytes (queued.max.request.bytes) is the broker-wide budget of
	// request bytes read but not yet answered. A frame reserves its cost
	// (RequestCost) before its body is read, so a connection waits (unread, its
	// bytes left in the kernel) until the budget has room; a frame that stops
	// arriving keeps only the cost of what it sent (StallAfter). Frames of up
	// to 32 KiB reserve nothing, so a full budget never stops small requests.
	QueuedMaxRequestBytes int64
	// StallAfter: a frame in progress whose buffers have not grown for this
	// long (1 MiB of body, or the whole of a smaller frame) while another frame
	// waits for the budget keeps only the cost of the buffers it filled, and
	// takes the rest back before reading further. Zero means DefaultStallAfter.
	StallAfter time.Duration
	// EvictStalledAfter: a frame that cannot fit beside what stalled frames
	// hold closes those stalled this long, once it has waited this long. Zero
	// means DefaultEvictStalledAfter.
	EvictStalledAfter time.Duration
	// RequestCost is what a frame of size bytes for API key reserves in the
	// budget: what decoding and answering it may hold, not only its bytes. Nil
	// means size. A frame costing more than the whole budget closes the connection.
	RequestCost func(key int16, size int) int64
	// QueuedMaxRequests (queued.max.requests) bounds the requests being handled at once.
	QueuedMaxRequests int
	// MaxPreAuthRequestSize (sasl.server.max.receive.size) is the largest frame a
	// connection may send before it has authenticated.
	MaxPreAuthRequestSize int32
}

// DefaultMaxPreAuthRequestSize is Kafka's sasl.server.max.receive.size default.
const DefaultMaxPreAuthRequestSize = 524288

// ListenerConfig says how connections accepted on one listener start.
type ListenerConfig struct {
	// RequireAuth makes connections start unauthenticated: their frames are limited
	// to Limits.MaxPreAuthRequestSize until Conn.SetAuthenticated is called (by the
	// SASL handshake). PLAINTEXT listeners without SASL leave it false.
	RequireAuth bool
}

// Defaults of Limits.StallAfter and Limits.EvictStalledAfter.
const (
	DefaultStallAfter        = time.Second
	DefaultEvictStalledAfter = 10 * time.Second
)

// byteBudget is the queued.max.request.bytes pool.
//
// A frame is admitted with its whole cost, so a frame whose bytes keep coming
// always completes: no two half-read frames can wait for each other. Admission
// is first come first served, so a large frame is not overtaken for ever by
// smaller ones. What a sender that goes silent must not do is keep what it was
// lent: a frame whose buffers have not grown for stallAfter while another
// frame waits is stalled, and keeps only the cost of the buffers it filled;
// it takes the rest again, as a new frame would, before it reads further. A
// waiter that could not fit even once every frame in progress is answered,
// because stalled frames' bytes hold the rest, does not hold back those behind
// it; once it has waited evictAfter it closes such stalled frames (evictFor)
// until it fits.
type byteBudget struct {
	mu         sync.Mutex
	limit      int64
	used       int64
	stalled    int64 // part of used held by stalled frames
	wake       chan struct{}
	waiters    []*waiter // in arrival order
	reading    map[*grant]struct{}
	stallAfter time.Duration
	evictAfter time.Duration
}

func newByteBudget(l Limits) *byteBudget {
	b := &byteBudget{limit: l.QueuedMaxRequestBytes, wake: make(chan struct{}), reading: map[*grant]struct{}{},
		stallAfter: l.StallAfter, evictAfter: l.EvictStalledAfter}
	if b.stallAfter <= 0 {
		b.stallAfter = DefaultStallAfter
	}
	if b.evictAfter <= 0 {
		b.evictAfter = DefaultEvictStalledAfter
	}
	return b
}

// grant is one frame's hold on the budget while its body is read. Its fields
// are guarded by the budget's mu.
type grant struct {
	b        *byteBudget
	cost     int64 // the whole frame's
	size     int
	held     int64
	buffered int // body bytes that have a buffer
	admitted time.Time
	progress time.Time // when buffered last grew
	stallAt  time.Time // zero unless stalled
	closing  bool
	close    func() // ends the connection (eviction)
}

type waiter struct {
	need  int64
	since time.Time
	g     *grant // the stalled frame taking its cost back; nil for a new frame
}

// admit reserves a new frame's whole cost, waiting until it may; nil when ctx
// ends or stop is closed first.
func (b *byteBudget) admit(ctx context.Context, stop <-chan struct{}, cost int64, size int, closeConn func()) *grant {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.wait(ctx, stop, &waiter{need: cost, since: time.Now()}) {
		return nil
	}
	now := time.Now()
	g := &grant{b: b, cost: cost, size: size, held: cost, admitted: now, progress: now, close: closeConn}
	b.used += cost
	b.reading[g] = struct{}{}
	return g
}

// grow is called before a buffer for the body up to upto bytes is taken. A
// stalled frame first takes the rest of its cost back; false when ctx ends or
// stop is closed meanwhile.
func (g *grant) grow(ctx context.Context, stop <-chan struct{}, upto int) bool {
	if g == nil {
		return true
	}
	b := g.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if !g.stallAt.IsZero() {
		need := g.cost - g.held
		if !b.wait(ctx, stop, &waiter{need: need, since: time.Now(), g: g}) {
			return false
		}
		b.used += need
		b.stalled -= g.held
		g.held, g.stallAt = g.cost, time.Time{}
	}
	if upto > g.buffered {
		g.buffered, g.progress = upto, time.Now()
	}
	return true
}

// done ends the body's reading and returns what the frame holds (its whole cost)
// until it is answered.
func (g *grant) done() int64 {
	if g == nil {
		return 0
	}
	b := g.b
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.reading, g)
	if !g.stallAt.IsZero() {
		b.stalled -= g.held
	}
	// A stalled frame's buffers are all its bytes by now: it holds its cost.
	b.used += g.cost - g.held
	return g.cost
}

// abort gives back what a frame whose body was not read holds.
func (g *grant) abort() {
	if g == nil {
		return
	}
	b := g.b
	b.mu.Lock()
	delete(b.reading, g)
	if !g.stallAt.IsZero() {
		b.stalled -= g.held
	}
	b.used -= g.held
	g.held = 0
	b.broadcast()
	b.mu.Unlock()
}

// wait returns once w may take its need, called and returning with mu held.
func (b *byteBudget) wait(ctx context.Context, stop <-chan struct{}, w *waiter) bool {
	b.waiters = append(b.waiters, w)
	defer func() {
		b.waiters = slices.DeleteFunc(b.waiters, func(x *waiter) bool { return x == w })
		b.broadcast() // those behind w may go now
	}()
	var tick *time.Ticker
	defer func() {
		if tick != nil {
			tick.Stop()
		}
	}()
	for {
		now := time.Now()
		b.markStalled(now)
		if b.fits(w) {
			return true
		}
		if now.Sub(w.since) >= b.evictAfter && w.need > b.limit-b.stalled {
			b.evictFor(w, now)
		}
		if tick == nil {
			// Frames stall and waits get old without anyone releasing.
			tick = time.NewTicker(b.stallAfter / 4)
		}
		ch := b.wake
		b.mu.Unlock()
		var ok bool
		select {
		case <-ch:
			ok = true
		case <-tick.C:
			ok = true
		case <-ctx.Done():
		case <-stop:
		}
		b.mu.Lock()
		if !ok {
			return false
		}
	}
}

// fits reports whether w may take its need now: it fits, and every waiter
// before it could not fit even once the frames in progress are answered.
func (b *byteBudget) fits(w *waiter) bool {
	if b.used+w.need > b.limit {
		return false
	}
	for _, x := range b.waiters {
		if x == w {
			return true
		}
		if x.need <= b.limit-b.stalled {
			return false
		}
	}
	return true
}

// markStalled gives back, for each frame whose buffers have not grown for
// stallAfter, the cost of the buffers it has not taken yet.
func (b *byteBudget) markStalled(now time.Time) {
	freed := false
	for g := range b.reading {
		if !g.stallAt.IsZero() || now.Sub(g.progress) < b.stallAfter {
			continue
		}
		keep := g.costOf(g.buffered)
		freed = freed || keep < g.held
		b.used -= g.held - keep
		b.stalled += keep
		g.held, g.stallAt = keep, now
	}
	if freed {
		b.broadcast()
	}
}

// costOf is the share of the frame's cost that n of its body bytes carry.
func (g *grant) costOf(n int) int64 {
	if n >= g.size || g.size == 0 {
		return g.cost
	}
	return (g.cost*int64(n) + int64(g.size) - 1) / int64(g.size)
}

// evictFor closes stalled frames, oldest first, until w fits once they are
// gone: those stalled for evictAfter, and those that went ahead of w (it could
// not fit) and stalled since, so that new frames stalling in turn are not
// each given evictAfter. Their readers give their part back as they end.
func (b *byteBudget) evictFor(w *waiter, now time.Time) {
	var old []*grant
	going := int64(0)
	for g := range b.reading {
		if g.closing {
			going += g.held
		} else if g != w.g && !g.stallAt.IsZero() && (now.Sub(g.stallAt) >= b.evictAfter || g.admitted.After(w.since)) {
			old = append(old, g)
		}
	}
	slices.SortFunc(old, func(x, y *grant) int { return x.stallAt.Compare(y.stallAt) })
	for _, g := range old {
		if b.used-going+w.need <= b.limit {
			return
		}
		g.closing = true
		going += g.held
		g.close()
	}
}

func (b *byteBudget) broadcast() {
	close(b.wake)
	b.wake = make(chan struct{})
}

func (b *byteBudget) release(n int64) {
	if b == nil || n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.broadcast()
	b.mu.Unlock()
}

// InFlightBytes is the part of queued.max.request.bytes in use (for tests and metrics).
func (s *Server) InFlightBytes() int64 {
	s.mu.Lock()
	b := s.budget // set by the first Serve
	s.mu.Unlock()
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// admit counts a new connection against max.connections and the per-IP limit;
// false means it must be closed. Called with s.mu held.
func (s *Server) admit(nc net.Conn) (ip string, ok bool) {
	ip = remoteIP(nc)
	if s.Limits.MaxConnections > 0 && len(s.conns) >= s.Limits.MaxConnections {
		return ip, false
	}
	limit, override := s.Limits.MaxConnectionsPerIPOverrides[ip]
	if !override {
		limit = s.Limits.MaxConnectionsPerIP
	}
	// An override of 0 refuses the address; the general limit 0 means none.
	if (override || limit > 0) && s.perIP[ip] >= limit {
		return ip, false
	}
	s.perIP[ip]++
	return ip, true
}

func remoteIP(nc net.Conn) string {
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(nc.RemoteAddr().String())
	if err != nil {
		return nc.RemoteAddr().String()
	}
	return host
}
