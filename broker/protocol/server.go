package protocol

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Response is a handler's answer to one request.
type Response struct {
	Msg  kmsg.Response // encoded at the request's version
	Body *Body         // a pre-encoded body (used by fetch); Msg must be nil
	// None sends nothing back (produce with acks=0) while keeping order.
	None bool
	// Close closes the connection once this answer is written (a failed SASL
	// authentication) and reads no further request.
	Close bool
	// Late, instead of Msg, computes the answer when it is this request's
	// turn to be written: once every request read before it on the connection
	// has been answered. An answer that describes cluster state (Metadata)
	// is then never older than the answers a pipelining client reads before
	// it, as with Kafka, which reads a connection's next request only after
	// answering the last. Computed at read time, a Metadata queued behind a
	// produce that waited seconds for its acknowledgements named the leaders
	// of seconds before, and librdkafka moved its partitions back to the old
	// leader for good.
	Late func() kmsg.Response
}

// Handler serves requests. Handle runs on the connection's reader goroutine in
// request order, so per-connection ordering of side effects (appends of one
// idempotent producer) is kept; it must call respond exactly once, immediately or
// later from any goroutine (delayed produce, long-poll fetch).
type Handler interface {
	Handle(ctx context.Context, c *Conn, h Header, req kmsg.Request, respond func(Response))
}

// Observer receives per-request timings (metrics). queue is from the frame's arrival
// to the handler's start, total until the response was written.
type Observer func(h Header, queue, total time.Duration, bytesOut int64)

// Server accepts connections and runs the per-connection loops.
type Server struct {
	Handler        Handler
	MaxRequestSize int32                                   // socket.request.max.bytes
	APIKeys        func() []kmsg.ApiVersionsResponseApiKey // for ApiVersions' unsupported-version answer
	MaxInFlight    int                                     // responses queued per connection
	Logger         *slog.Logger
	Observe        Observer
	// IdleTimeout (connections.max.idle.ms) closes a connection that has sent
	// nothing and has no answer pending for that long, and one whose frame has
	// stopped arriving for that long. Zero means never.
	IdleTimeout time.Duration
	Limits      Limits
	// ReuseFrame names the API keys whose handlers keep no part of the
	// request (no byte slice of it) once they have responded: their frames'
	// buffers are reused for later frames. Nil reuses none.
	ReuseFrame func(key int16) bool

	mu       sync.Mutex
	conns    map[*Conn]struct{}
	perIP    map[string]int
	budget   *byteBudget
	handling chan struct{} // queued.max.requests
	closing  bool
	closed   atomic.Bool
	panics   atomic.Int64
	draining chan struct{}
	listener []net.Listener
	wg       sync.WaitGroup
}

// Conn is one client connection.
type Conn struct {
	nc     net.Conn
	ln     net.Listener
	srv    *Server
	ctx    context.Context
	cancel context.CancelFunc
	queue  chan *slot
	ip     string

	authenticated atomic.Bool
	lastWrite     atomic.Int64 // unix nanoseconds of the last response written
	pending       atomic.Int32 // requests read whose answer is not written yet
	mutedUntil    atomic.Int64 // unix nanoseconds; no frame is read before (KIP-219)
}

// Mute stops reading requests from the connection for d (a client over its
// quota, KIP-219): answers already being handled are still written, and the
// next frame is read once d has passed. A longer mute in force is kept.
func (c *Conn) Mute(d time.Duration) {
	until := time.Now().Add(d).UnixNano()
	for {
		cur := c.mutedUntil.Load()
		if cur >= until || c.mutedUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// awaitUnmuted waits out a mute; false when the connection closed meanwhile.
func (c *Conn) awaitUnmuted() bool {
	until := c.mutedUntil.Load()
	if until == 0 {
		return true
	}
	d := time.Until(time.Unix(0, until))
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// Authenticated reports whether the connection has authenticated (always true on
// listeners without RequireAuth). Until then its frames are limited to
// Limits.MaxPreAuthRequestSize.
func (c *Conn) Authenticated() bool { return c.authenticated.Load() }

// SetAuthenticated marks the connection authenticated (after a SASL handshake):
// from its next frame on, socket.request.max.bytes applies.
func (c *Conn) SetAuthenticated() { c.authenticated.Store(true) }

// Listener is the listener that accepted the connection.
func (c *Conn) Listener() net.Listener { return c.ln }

// NetConn is the underlying connection (a *tls.Conn on TLS listeners).
func (c *Conn) NetConn() net.Conn { return c.nc }

// RemoteAddr is the client's address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// Context is cancelled when the connection closes.
func (c *Conn) Context() context.Context { return c.ctx }

type slot struct {
	h        Header
	reserved int64 // queued.max.request.bytes held until the answer is known
	budget   *byteBudget
	arrived  time.Time
	queued   time.Duration // from arrival until its handler started
	done     chan struct{}
	resp     Response
	once     sync.Once
	frame    []byte // the request's bytes, pooled again once answered (Server.ReuseFrame)
}

// Serve accepts on ln until it is closed or Shutdown is called; its connections
// start authenticated.
func (s *Server) Serve(ln net.Listener) error { return s.ServeWith(ln, ListenerConfig{}) }

// ServeWith is Serve with per-listener settings.
func (s *Server) ServeWith(ln net.Listener, lc ListenerConfig) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return net.ErrClosed
	}
	s.init()
	s.listener = append(s.listener, ln)
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			// Temporary failures (EMFILE...): back off instead of spinning.
			if delay == 0 {
				delay = 5 * time.Millisecond
			} else if delay < time.Second {
				delay *= 2
			}
			s.logger().Warn("accept failed", "err", err, "retry_in", delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		s.startConn(nc, ln, lc)
	}
}

func (s *Server) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

func (s *Server) startConn(nc net.Conn, ln net.Listener, lc ListenerConfig) {
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
		_ = tc.SetKeepAlive(true)
	}
	inflight := s.MaxInFlight
	if inflight <= 0 {
		inflight = 100
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Conn{nc: nc, ln: ln, srv: s, ctx: ctx, cancel: cancel, queue: make(chan *slot, inflight)}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		cancel()
		nc.Close()
		return
	}
	ip, ok := s.admit(nc)
	if !ok {
		s.mu.Unlock()
		cancel()
		nc.Close()
		s.logger().Warn("connection refused: max.connections or max.connections.per.ip reached", "remote", nc.RemoteAddr().String())
		return
	}
	c.ip = ip
	c.authenticated.Store(!lc.RequireAuth)
	c.lastWrite.Store(time.Now().UnixNano())
	s.conns[c] = struct{}{}
	s.wg.Add(2)
	s.mu.Unlock()
	go c.readLoop()
	go c.writeLoop()
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

func (s *Server) init() {
	if s.conns == nil {
		s.conns = map[*Conn]struct{}{}
		s.perIP = map[string]int{}
		s.draining = make(chan struct{})
		if s.Limits.QueuedMaxRequestBytes > 0 {
			s.budget = newByteBudget(s.Limits)
		}
		if s.Limits.QueuedMaxRequests > 0 {
			s.handling = make(chan struct{}, s.Limits.QueuedMaxRequests)
		}
	}
}

// Draining is closed when Shutdown starts: requests parked in long waits
// (long-poll fetches) should answer with what they have.
func (c *Conn) Draining() <-chan struct{} { return c.srv.draining }

// Shutdown stops accepting, stops reading new requests, lets in-flight requests
// finish and their responses be written (bounded by ctx), then closes connections.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.init()
	if !s.closing {
		close(s.draining)
	}
	s.closing = true
	s.closed.Store(true)
	for _, ln := range s.listener {
		ln.Close()
	}
	for c := range s.conns {
		// Unblock the reader; the writer drains what was already accepted.
		_ = c.nc.SetReadDeadline(time.Now())
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.conns {
			c.cancel()
			c.nc.Close()
		}
		s.mu.Unlock()
		<-done
		return ctx.Err()
	}
}

func (c *Conn) readLoop() {
	defer c.srv.wg.Done()
	defer close(c.queue)
	br := bufio.NewReaderSize(idleReader{c}, 64<<10)
	max := c.srv.MaxRequestSize
	if max <= 0 {
		max = 100 << 20
	}
	preAuth := c.srv.Limits.MaxPreAuthRequestSize
	if preAuth <= 0 {
		preAuth = DefaultMaxPreAuthRequestSize
	}
	for {
		limit, what := max, "socket.request.max.bytes"
		if !c.Authenticated() && preAuth < max {
			limit, what = preAuth, "sasl.server.max.receive.size (not authenticated yet)"
		}
		if !c.awaitUnmuted() {
			return
		}
		frame, reserved, err := c.readFrame(br, limit, what)
		if err != nil {
			c.readFailed(err)
			return
		}
		// A mute set while this frame was awaited (a delayed answer's throttle)
		// holds it back too.
		if !c.awaitUnmuted() {
			c.srv.budget.release(reserved)
			return
		}
		arrived := time.Now()
		h, req, err := ParseRequest(frame)
		if err == nil && h.Key == 18 && c.srv.apiVersionsTooNew(h.Version) {
			err = errUnsupportedVersion
		}
		if err != nil {
			c.srv.budget.release(reserved)
			if IsUnsupportedVersion(err) && h.Key == 18 && c.srv.APIKeys != nil {
				// KIP-511: answer in v0 with the supported versions so the client can retry.
				resp := &kmsg.ApiVersionsResponse{Version: 0, ErrorCode: kerr.UnsupportedVersion.Code, ApiKeys: c.srv.APIKeys()}
				s := &slot{h: Header{Key: 18, Version: 0, CorrelationID: h.CorrelationID}, arrived: arrived, done: make(chan struct{})}
				s.finish(Response{Msg: resp})
				if !c.enqueue(s) {
					return
				}
				continue
			}
			c.srv.logger().Warn("closing connection after a bad request", "remote", c.nc.RemoteAddr().String(),
				"api_key", h.Key, "version", h.Version, "client_id", h.ClientID, "err", err)
			return
		}
		s := &slot{h: h, arrived: arrived, done: make(chan struct{}), reserved: reserved, budget: c.srv.budget}
		if c.srv.reuses(h.Key) {
			s.frame = frame
		}
		if !c.enqueue(s) {
			s.finish(Response{None: true})
			return
		}
		if !c.handle(s, h, req) {
			return
		}
	}
}

func (s *Server) reuses(key int16) bool { return s.ReuseFrame != nil && key >= 0 && s.ReuseFrame(key) }

// smallFrame is the largest frame read without a queued.max.request.bytes reservation.
const smallFrame = 32 << 10

// errIdle ends a connection that sent nothing for connections.max.idle.ms.
var errIdle = errors.New("idle for connections.max.idle.ms")

// readFrame waits for the next frame (closing the connection when it stays idle),
// reserves its cost in the queued.max.request.bytes budget, then reads it.
func (c *Conn) readFrame(br *bufio.Reader, limit int32, what string) ([]byte, int64, error) {
	for {
		_, err := br.Peek(1)
		if err == nil {
			break
		}
		if !isTimeout(err) || c.srv.closed.Load() {
			return nil, 0, err
		}
		if !c.busy() {
			return nil, 0, errIdle
		}
	}
	n, err := readSize(br, limit, what)
	if err != nil {
		return nil, 0, stalled(err, c.srv.IdleTimeout)
	}
	reserved, key := int64(n), int16(-1)
	if n >= 2 && (c.srv.Limits.RequestCost != nil || c.srv.ReuseFrame != nil) {
		k, err := br.Peek(2)
		if err != nil {
			return nil, 0, stalled(err, c.srv.IdleTimeout)
		}
		key = int16(binary.BigEndian.Uint16(k))
	}
	if cost := c.srv.Limits.RequestCost; cost != nil && key >= 0 {
		reserved = cost(key, n)
	}
	if n <= smallFrame {
		// Small frames (heartbeats, commits, most metadata and fetch requests)
		// skip the budget, so frames holding it cannot stall every client; they
		// stay bounded by one frame per connection and queued.max.requests.
		reserved = 0
	}
	if b := c.srv.budget; b != nil && reserved > b.limit {
		return nil, 0, fmt.Errorf("%w: a %d-byte %s request may hold %d bytes, more than queued.max.request.bytes (%d)",
			ErrFrameTooLarge, n, kmsg.NameForKey(key), reserved, b.limit)
	}
	var g *grant
	if b := c.srv.budget; b != nil && reserved > 0 {
		if g = b.admit(c.ctx, c.srv.draining, reserved, n, c.evict); g == nil {
			return nil, 0, net.ErrClosed
		}
	}
	grow := func(upto int) error {
		if !g.grow(c.ctx, c.srv.draining, upto) {
			return net.ErrClosed
		}
		return nil
	}
	var frame []byte
	if c.srv.reuses(key) {
		frame, err = readPooledBody(br, n, grow)
	} else {
		frame, err = readBodyCap(br, n, n, grow)
	}
	if err != nil {
		g.abort()
		return nil, 0, stalled(err, c.srv.IdleTimeout)
	}
	return frame, g.done(), nil
}

// evict closes a connection whose stalled frame stands in the way of another
// (Limits.EvictStalledAfter).
func (c *Conn) evict() {
	c.srv.logger().Warn("closing a connection whose request frame stopped arriving while other requests waited for the queued.max.request.bytes it held",
		"remote", c.nc.RemoteAddr().String())
	c.Close()
}

// stalled names a timeout inside a frame: its bytes stopped arriving.
func stalled(err error, idle time.Duration) error {
	if isTimeout(err) {
		return fmt.Errorf("request frame stopped arriving for %s (connections.max.idle.ms): %w", idle, err)
	}
	return err
}

// busy reports whether the connection has answers pending or wrote one within the
// idle timeout: a client waiting on a long poll is not idle.
func (c *Conn) busy() bool {
	return c.pending.Load() > 0 || time.Since(time.Unix(0, c.lastWrite.Load())) < c.srv.IdleTimeout
}

func (c *Conn) readFailed(err error) {
	if !(isTimeout(err) && c.srv.closed.Load()) {
		// The client hung up (or sent garbage, or went idle): nobody will read
		// answers, so parked requests end now instead of pinning the connection.
		c.cancel()
	}
	switch {
	case errors.Is(err, errIdle):
		c.srv.logger().Debug("closing idle connection", "remote", c.nc.RemoteAddr().String())
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, io.ErrUnexpectedEOF):
	case isTimeout(err) && c.srv.closed.Load():
	default:
		c.srv.logger().Warn("closing connection", "remote", c.nc.RemoteAddr().String(), "err", err)
	}
}

// idleReader moves the read deadline forward on every read, so a connection
// times out only when no byte arrives for connections.max.idle.ms; once the
// server shuts down it stops doing so, letting Shutdown's deadline stand.
type idleReader struct{ c *Conn }

func (r idleReader) Read(p []byte) (int, error) {
	srv := r.c.srv
	if srv.closed.Load() {
		_ = r.c.nc.SetReadDeadline(time.Now())
	} else if srv.IdleTimeout > 0 {
		_ = r.c.nc.SetReadDeadline(time.Now().Add(srv.IdleTimeout))
	}
	return r.c.nc.Read(p)
}

// handle runs the handler within the queued.max.requests bound.
func (c *Conn) handle(s *slot, h Header, req kmsg.Request) bool {
	if c.srv.handling != nil {
		select {
		case c.srv.handling <- struct{}{}:
		case <-c.ctx.Done():
			s.finish(Response{None: true})
			return false
		}
		defer func() { <-c.srv.handling }()
	}
	return c.dispatch(s, h, req)
}

// apiVersionsTooNew reports whether an ApiVersions request is above the version
// this server serves, even though kmsg could parse it (KIP-511: answer in v0).
func (s *Server) apiVersionsTooNew(v int16) bool {
	if s.APIKeys == nil {
		return false
	}
	for _, k := range s.APIKeys() {
		if k.ApiKey == 18 {
			return v > k.MaxVersion
		}
	}
	return false
}

func (c *Conn) enqueue(s *slot) bool {
	c.pending.Add(1)
	select {
	case c.queue <- s:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// Panics counts handler panics (each closed its connection): always a bug.
func (s *Server) Panics() int64 { return s.panics.Load() }

// dispatch runs the handler, turning a panic into a closed connection rather than a
// dead broker.
func (c *Conn) dispatch(s *slot, h Header, req kmsg.Request) (ok bool) {
	s.queued = time.Since(s.arrived)
	defer func() {
		if r := recover(); r != nil {
			c.srv.panics.Add(1)
			c.srv.logger().Error("request handler panicked; closing the connection",
				"api", kmsg.NameForKey(h.Key), "version", h.Version, "panic", fmt.Sprint(r))
			c.cancel()
			c.nc.Close()
			ok = false
		}
	}()
	c.srv.Handler.Handle(c.ctx, c, h, req, s.finish)
	return true
}

func (s *slot) finish(r Response) {
	s.once.Do(func() {
		if r.Late == nil {
			// A late answer keeps the reservation until it is computed.
			s.release()
		}
		if s.frame != nil {
			putFrame(s.frame)
			s.frame = nil
		}
		s.resp = r
		close(s.done)
	})
}

// release returns the slot's part of queued.max.request.bytes, once.
func (s *slot) release() {
	s.budget.release(s.reserved)
	s.reserved = 0
}

func (c *Conn) writeLoop() {
	defer c.srv.wg.Done()
	defer func() {
		c.cancel()
		c.nc.Close()
		c.srv.mu.Lock()
		delete(c.srv.conns, c)
		if c.srv.perIP[c.ip]--; c.srv.perIP[c.ip] <= 0 {
			delete(c.srv.perIP, c.ip)
		}
		c.srv.mu.Unlock()
		// Drop whatever is still queued so file regions are released.
		for s := range c.queue {
			go func(s *slot) {
				<-s.done
				if s.resp.Body != nil {
					s.resp.Body.Release()
				}
				if s.resp.Late != nil {
					s.release()
				}
			}(s)
		}
	}()
	bw := bufio.NewWriterSize(c.nc, 64<<10)
	sf := newFileSender(c.nc)
	var hdr []byte
	// cur is the answer being waited for; if the loop gives up on it, its file
	// regions must still be released once the handler answers.
	var cur *slot
	defer func() {
		if cur != nil {
			go func(s *slot) {
				<-s.done
				if s.resp.Body != nil {
					s.resp.Body.Release()
				}
				if s.resp.Late != nil {
					s.release()
				}
			}(cur)
		}
	}()
	for s := range c.queue {
		cur = s
		select {
		case <-s.done:
		default:
			// The next answer is not ready (delayed produce, long poll): send what is
			// buffered now rather than holding earlier answers back.
			if bw.Flush() != nil {
				return
			}
			select {
			case <-s.done:
			case <-c.ctx.Done():
				return
			}
		}
		c.lastWrite.Store(time.Now().UnixNano())
		c.pending.Add(-1)
		if s.resp.None {
			// Nothing to send (acks=0), but answers before it may still sit in
			// the buffer.
			if len(c.queue) == 0 && bw.Flush() != nil {
				return
			}
			continue
		}
		if s.resp.Late != nil {
			s.resp.Msg = s.resp.Late()
		}
		hdr = AppendResponseHeader(hdr[:0], s.h)
		body := s.resp.Body
		if body == nil {
			body = &Body{}
			if s.resp.Msg != nil {
				s.resp.Msg.SetVersion(s.h.Version)
				body.Bytes(s.resp.Msg.AppendTo(nil))
			}
		}
		if s.resp.Late != nil {
			s.release()
			s.resp.Late = nil
		}
		cur = nil // writeFrame releases the body, written or not
		n, err := writeFrame(bw, sf, hdr, body)
		if err == nil && len(c.queue) == 0 {
			err = bw.Flush()
		}
		if err != nil {
			return
		}
		c.lastWrite.Store(time.Now().UnixNano())
		if c.srv.Observe != nil {
			c.srv.Observe(s.h, s.queued, time.Since(s.arrived), n)
		}
		if s.resp.Close {
			_ = bw.Flush()
			return
		}
	}
	_ = bw.Flush()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Close closes the connection; queued responses are dropped.
func (c *Conn) Close() {
	c.cancel()
	c.nc.Close()
}
