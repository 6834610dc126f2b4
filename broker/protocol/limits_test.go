package protocol_test

import (
	"context"
	"encoding/binary"
	"errors"
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

// produceFrame is a Produce request framed with correlation id corr whose one
// partition carries size bytes of records (opaque to the protocol layer).
func produceFrame(corr int32, size int) []byte {
	p := kmsg.NewProduceRequestTopicPartition()
	p.Records = make([]byte, size)
	tp := kmsg.NewProduceRequestTopic()
	tp.Topic, tp.Partitions = "t", []kmsg.ProduceRequestTopicPartition{p}
	r := kmsg.NewPtrProduceRequest()
	r.Version, r.Acks, r.TimeoutMillis = 3, 1, 5000
	r.Topics = []kmsg.ProduceRequestTopic{tp}
	return frame(r, corr)
}

// halfSend opens a connection that sends the header of a Produce frame
// declaring declared bytes, then sent bytes of its body, and goes silent.
func halfSend(t *testing.T, addr string, declared, sent int) *client {
	t.Helper()
	c := dial(t, addr)
	hdr := binary.BigEndian.AppendUint32(nil, uint32(declared))
	hdr = binary.BigEndian.AppendUint16(hdr, 0) // Produce
	c.write(append(hdr, make([]byte, sent)...))
	return c
}

// produceCost is the broker's cost of a frame: Produce twice its size.
func produceCost(key int16, size int) int64 {
	if key == 0 {
		return 2 * int64(size)
	}
	return 16 * int64(size)
}

// TestHalfSentFramesDoNotBlockLargeFrames: connections that announce a 100 MiB
// Produce (costing the whole default queued.max.request.bytes), send 1 MiB of
// it and go silent hold only what they sent, so a full 1 MiB Produce on
// another connection is served while they stay open, long before
// connections.max.idle.ms.
func TestHalfSentFramesDoNotBlockLargeFrames(t *testing.T) {
	srv := &protocol.Server{Handler: answering(), IdleTimeout: 10 * time.Minute,
		Limits: protocol.Limits{QueuedMaxRequestBytes: 209715200, RequestCost: produceCost}}
	addr := serve(t, srv)
	var attackers []*client
	for range 3 {
		attackers = append(attackers, halfSend(t, addr, 100<<20, 1<<20))
	}
	c := dial(t, addr)
	for corr := range int32(3) {
		c.write(produceFrame(corr, 1<<20))
		if got, _, err := c.read(30 * time.Second); err != nil || got != corr {
			t.Fatalf("1 MiB produce %d beside half-sent frames: answer %d, %v (%d bytes reserved)", corr, got, err, srv.InFlightBytes())
		}
	}
	// The silent connections are still open: nothing closed them to make room.
	for i, a := range attackers {
		_ = a.c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, err := a.br.ReadByte(); !isTimeout(err) {
			t.Errorf("half-sent connection %d: %v, want still open", i, err)
		}
	}
}

// TestStalledFramesEvictedForFrameThatCannotFit: a frame that cannot fit
// beside what stalled frames hold (their bytes are real memory) closes them
// once it has waited Limits.EvictStalledAfter, so no frame waits for
// connections.max.idle.ms; a stalled frame that does not stand in anyone's
// way is left alone.
func TestStalledFramesEvictedForFrameThatCannotFit(t *testing.T) {
	srv := &protocol.Server{Handler: answering(), IdleTimeout: 10 * time.Minute,
		Limits: protocol.Limits{QueuedMaxRequestBytes: 8 << 20, RequestCost: produceCost,
			StallAfter: 100 * time.Millisecond, EvictStalledAfter: 500 * time.Millisecond}}
	addr := serve(t, srv)
	stalled := halfSend(t, addr, 4<<20, 3<<19) // 1.5 MiB of 4, so 2 MiB of buffers
	deadline := time.Now().Add(10 * time.Second)
	for srv.InFlightBytes() != 8<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("the half-sent frame holds %d bytes, want its whole cost", srv.InFlightBytes())
		}
		time.Sleep(5 * time.Millisecond)
	}
	c := dial(t, addr)
	c.write(produceFrame(1, 4<<20-100)) // costs the whole budget
	if got, _, err := c.read(30 * time.Second); err != nil || got != 1 {
		t.Fatalf("produce costing the whole budget: answer %d, %v", got, err)
	}
	stalled.expectClosed()
}

// TestStalledFrameResumes: a frame demoted while stalled gets the rest of its
// cost back when its bytes resume and is answered; the budget is whole after.
func TestStalledFrameResumes(t *testing.T) {
	srv := &protocol.Server{Handler: answering(), IdleTimeout: 10 * time.Minute,
		Limits: protocol.Limits{QueuedMaxRequestBytes: 8 << 20, RequestCost: produceCost,
			StallAfter: 100 * time.Millisecond, EvictStalledAfter: time.Minute}}
	addr := serve(t, srv)
	slow := dial(t, addr)
	f := produceFrame(1, 3<<20)
	slow.write(f[:1<<20])
	other := dial(t, addr)
	other.write(produceFrame(2, 1<<20))
	if got, _, err := other.read(30 * time.Second); err != nil || got != 2 {
		t.Fatalf("1 MiB produce beside a stalled 3 MiB frame: %d, %v", got, err)
	}
	slow.write(f[1<<20:])
	if got, _, err := slow.read(30 * time.Second); err != nil || got != 1 {
		t.Fatalf("the stalled frame, resumed: %d, %v", got, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for srv.InFlightBytes() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still reserved", srv.InFlightBytes())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
