package protocol

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
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

	mu       sync.Mutex
	conns    map[*Conn]struct{}
	closing  bool
	draining chan struct{}
	listener []net.Listener
	wg       sync.WaitGroup
}

// Conn is one client connection.
type Conn struct {
	nc     net.Conn
	srv    *Server
	ctx    context.Context
	cancel context.CancelFunc
	queue  chan *slot
}

// RemoteAddr is the client's address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// Context is cancelled when the connection closes.
func (c *Conn) Context() context.Context { return c.ctx }

type slot struct {
	h       Header
	arrived time.Time
	queued  time.Duration // from arrival until its handler started
	done    chan struct{}
	resp    Response
	once    sync.Once
}

// Serve accepts on ln until it is closed or Shutdown is called.
func (s *Server) Serve(ln net.Listener) error {
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
		s.startConn(nc)
	}
}

func (s *Server) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

func (s *Server) startConn(nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
		_ = tc.SetKeepAlive(true)
	}
	inflight := s.MaxInFlight
	if inflight <= 0 {
		inflight = 100
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Conn{nc: nc, srv: s, ctx: ctx, cancel: cancel, queue: make(chan *slot, inflight)}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		cancel()
		nc.Close()
		return
	}
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
		s.draining = make(chan struct{})
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
	br := bufio.NewReaderSize(c.nc, 64<<10)
	max := c.srv.MaxRequestSize
	if max <= 0 {
		max = 100 << 20
	}
	for {
		frame, err := ReadFrame(br, max)
		if err != nil {
			if !(isTimeout(err) && c.srv.isClosing()) {
				// The client hung up (or sent garbage): nobody will read answers, so
				// parked requests end now instead of pinning the connection.
				c.cancel()
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isTimeout(err) && !errors.Is(err, io.ErrUnexpectedEOF) {
				c.srv.logger().Warn("closing connection", "remote", c.nc.RemoteAddr().String(), "err", err)
			}
			return
		}
		arrived := time.Now()
		h, req, err := ParseRequest(frame)
		if err == nil && h.Key == 18 && c.srv.apiVersionsTooNew(h.Version) {
			err = errUnsupportedVersion
		}
		if err != nil {
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
		s := &slot{h: h, arrived: arrived, done: make(chan struct{})}
		if !c.enqueue(s) {
			return
		}
		if !c.dispatch(s, h, req) {
			return
		}
	}
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
	select {
	case c.queue <- s:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// dispatch runs the handler, turning a panic into a closed connection rather than a
// dead broker.
func (c *Conn) dispatch(s *slot, h Header, req kmsg.Request) (ok bool) {
	s.queued = time.Since(s.arrived)
	defer func() {
		if r := recover(); r != nil {
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
		s.resp = r
		close(s.done)
	})
}

func (c *Conn) writeLoop() {
	defer c.srv.wg.Done()
	defer func() {
		c.cancel()
		c.nc.Close()
		c.srv.mu.Lock()
		delete(c.srv.conns, c)
		c.srv.mu.Unlock()
		// Drop whatever is still queued so file regions are released.
		for s := range c.queue {
			go func(s *slot) {
				<-s.done
				if s.resp.Body != nil {
					s.resp.Body.Release()
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
		if s.resp.None {
			// Nothing to send (acks=0), but answers before it may still sit in
			// the buffer.
			if len(c.queue) == 0 && bw.Flush() != nil {
				return
			}
			continue
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
		cur = nil // writeFrame releases the body, written or not
		n, err := writeFrame(bw, sf, hdr, body)
		if err == nil && len(c.queue) == 0 {
			err = bw.Flush()
		}
		if err != nil {
			return
		}
		if c.srv.Observe != nil {
			c.srv.Observe(s.h, s.queued, time.Since(s.arrived), n)
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
