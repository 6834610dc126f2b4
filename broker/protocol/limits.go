package protocol

import (
	"context"
	"net"
	"sync"
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
	// request bytes read but not yet answered. A frame reserves its declared size
	// cost (RequestCost) before its body is read, so a connection waits (unread,
	// its bytes left in the kernel) until the budget has room. Frames of up to
	// 32 KiB reserve nothing, so a full budget never stops small requests.
	QueuedMaxRequestBytes int64
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

// byteBudget is the queued.max.request.bytes pool.
type byteBudget struct {
	mu    sync.Mutex
	limit int64
	used  int64
	wake  chan struct{}
}

func newByteBudget(limit int64) *byteBudget {
	return &byteBudget{limit: limit, wake: make(chan struct{})}
}

// acquire reserves n bytes, waiting until they fit, ctx ends or stop is closed.
func (b *byteBudget) acquire(ctx context.Context, stop <-chan struct{}, n int64) bool {
	if b == nil || n == 0 {
		return true
	}
	for {
		b.mu.Lock()
		if b.used+n <= b.limit {
			b.used += n
			b.mu.Unlock()
			return true
		}
		ch := b.wake
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		case <-stop:
			return false
		}
	}
}

func (b *byteBudget) release(n int64) {
	if b == nil || n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	close(b.wake)
	b.wake = make(chan struct{})
	b.mu.Unlock()
}

// InFlightBytes is the part of queued.max.request.bytes in use (for tests and metrics).
func (s *Server) InFlightBytes() int64 {
	if s.budget == nil {
		return 0
	}
	s.budget.mu.Lock()
	defer s.budget.mu.Unlock()
	return s.budget.used
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
