package protocol_test

import (
	"context"
	"encoding/binary"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
)

func answering() protocol.Handler {
	return handlerFunc(func(_ context.Context, _ *protocol.Conn, _ protocol.Header, req kmsg.Request, respond func(protocol.Response)) {
		answer(req, respond)
	})
}

func (c *client) roundTrip(corr int32) {
	c.t.Helper()
	c.write(frame(metadata(), corr))
	if got, _, err := c.read(5 * time.Second); err != nil || got != corr {
		c.t.Fatalf("request %d: answer %d, %v", corr, got, err)
	}
}

// TestIdleConnectionClosed: connections.max.idle.ms closes a connection that
// sends nothing, after it has been used.
func TestIdleConnectionClosed(t *testing.T) {
	addr := serve(t, &protocol.Server{Handler: answering(), IdleTimeout: 200 * time.Millisecond})
	c := dial(t, addr)
	c.roundTrip(1)
	c.expectClosed()
}

// TestStalledFrameClosed: a frame whose bytes stop arriving ends the connection
// and gives its memory and budget back, so ten half-sent large frames pin nothing.
func TestStalledFrameClosed(t *testing.T) {
	srv := &protocol.Server{Handler: answering(), IdleTimeout: 300 * time.Millisecond,
		Limits: protocol.Limits{QueuedMaxRequestBytes: 64 << 20}}
	addr := serve(t, srv)
	var cs []*client
	for range 10 {
		c := dial(t, addr)
		hdr := binary.BigEndian.AppendUint32(nil, 8<<20)
		c.write(append(hdr, make([]byte, 4<<20)...))
		cs = append(cs, c)
	}
	for _, c := range cs {
		c.expectClosed()
	}
	deadline := time.Now().Add(10 * time.Second)
	for srv.InFlightBytes() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still reserved after the stalled connections closed", srv.InFlightBytes())
		}
		time.Sleep(10 * time.Millisecond)
	}
	dial(t, addr).roundTrip(1)
}

// TestLongPollIsNotIdle: a connection waiting for a parked answer is not idle.
func TestLongPollIsNotIdle(t *testing.T) {
	idle := 200 * time.Millisecond
	addr := serve(t, &protocol.Server{IdleTimeout: idle, Handler: handlerFunc(func(_ context.Context, _ *protocol.Conn, _ protocol.Header, req kmsg.Request, respond func(protocol.Response)) {
		time.AfterFunc(5*idle, func() { answer(req, respond) })
	})})
	c := dial(t, addr)
	c.roundTrip(1)
}

// TestPreAuthFrameLimit: before authentication, frames above
// sasl.server.max.receive.size close the connection; after it, the full limit holds.
func TestPreAuthFrameLimit(t *testing.T) {
	srv := &protocol.Server{Limits: protocol.Limits{MaxPreAuthRequestSize: 64},
		Handler: handlerFunc(func(_ context.Context, c *protocol.Conn, _ protocol.Header, req kmsg.Request, respond func(protocol.Response)) {
			if !c.Authenticated() {
				c.SetAuthenticated()
			}
			answer(req, respond)
		})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.ServeWith(ln, protocol.ListenerConfig{RequireAuth: true}) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	big := func() []byte {
		m := metadata()
		m.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(string(make([]byte, 200)))}}
		return frame(m, 2)
	}
	unauth := dial(t, ln.Addr().String())
	unauth.write(big())
	unauth.expectClosed()

	c := dial(t, ln.Addr().String())
	c.roundTrip(1) // authenticates
	c.write(big())
	if corr, _, err := c.read(5 * time.Second); err != nil || corr != 2 {
		t.Fatalf("large frame after authentication: %d, %v", corr, err)
	}
}

// TestConnectionLimits: max.connections.per.ip refuses the next connection from
// that address, an override raises it, and max.connections caps the total.
func TestConnectionLimits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits protocol.Limits
		allow  int
	}{
		{"per-ip", protocol.Limits{MaxConnectionsPerIP: 2}, 2},
		{"override", protocol.Limits{MaxConnectionsPerIP: 2, MaxConnectionsPerIPOverrides: map[string]int{"127.0.0.1": 3}}, 3},
		{"override-zero", protocol.Limits{MaxConnectionsPerIPOverrides: map[string]int{"127.0.0.1": 0}}, 0},
		{"total", protocol.Limits{MaxConnections: 1}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := serve(t, &protocol.Server{Handler: answering(), Limits: tc.limits})
			for i := range tc.allow {
				dial(t, addr).roundTrip(int32(i))
			}
			dial(t, addr).expectClosed()
		})
	}
}

// TestByteBudgetHoldsFramesBack: a frame that does not fit queued.max.request.bytes
// is not read (nor handled) until the frame holding the budget is answered, while
// small frames are still served.
func TestByteBudgetHoldsFramesBack(t *testing.T) {
	var handled atomic.Int32
	release := make(chan struct{})
	srv := &protocol.Server{Limits: protocol.Limits{QueuedMaxRequestBytes: 1 << 20},
		Handler: handlerFunc(func(_ context.Context, _ *protocol.Conn, h protocol.Header, req kmsg.Request, respond func(protocol.Response)) {
			handled.Add(1)
			if h.CorrelationID == 1 {
				go func() { <-release; answer(req, respond) }()
				return
			}
			answer(req, respond)
		})}
	addr := serve(t, srv)
	padded := func(corr int32, size int) []byte {
		m := metadata()
		for range size / 20000 {
			m.Topics = append(m.Topics, kmsg.MetadataRequestTopic{Topic: kmsg.StringPtr(string(make([]byte, 20000)))})
		}
		return frame(m, corr)
	}
	a := dial(t, addr)
	a.write(padded(1, 700<<10))
	deadline := time.Now().Add(10 * time.Second)
	for handled.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("first request not handled")
		}
		time.Sleep(5 * time.Millisecond)
	}
	b := dial(t, addr)
	b.write(padded(2, 700<<10))
	if _, _, err := b.read(300 * time.Millisecond); err == nil {
		t.Fatal("second frame was served while the budget was held")
	}
	if n := handled.Load(); n != 1 {
		t.Fatalf("%d requests handled, want 1 while the budget is held", n)
	}
	// Small requests skip the budget: a client with a heartbeat is not stalled.
	dial(t, addr).roundTrip(3)
	close(release)
	if corr, _, err := a.read(5 * time.Second); err != nil || corr != 1 {
		t.Fatalf("first: %d, %v", corr, err)
	}
	if corr, _, err := b.read(5 * time.Second); err != nil || corr != 2 {
		t.Fatalf("second after release: %d, %v", corr, err)
	}
}

// TestRequestCostOverBudgetCloses: a frame whose cost (RequestCost) exceeds the
// whole budget is refused before its body is read; a cheaper one is served.
func TestRequestCostOverBudgetCloses(t *testing.T) {
	srv := &protocol.Server{Handler: answering(), Limits: protocol.Limits{
		QueuedMaxRequestBytes: 1 << 20,
		RequestCost: func(key int16, size int) int64 {
			if key == 0 {
				return int64(size)
			}
			return 16 * int64(size)
		},
	}}
	addr := serve(t, srv)
	padded := func(corr int32) []byte {
		m := metadata()
		for range 5 {
			m.Topics = append(m.Topics, kmsg.MetadataRequestTopic{Topic: kmsg.StringPtr(string(make([]byte, 20000)))})
		}
		return frame(m, corr)
	}
	c := dial(t, addr)
	c.write(padded(1)) // ~100 KB, costing 1.6 MB
	c.expectClosed()
	dial(t, addr).roundTrip(2)
	if n := srv.InFlightBytes(); n != 0 {
		t.Fatalf("%d bytes still reserved", n)
	}
}
