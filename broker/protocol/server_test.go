package protocol_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
)

// handlerFunc adapts a function to protocol.Handler.
type handlerFunc func(ctx context.Context, c *protocol.Conn, h protocol.Header, req kmsg.Request, respond func(protocol.Response))

func (f handlerFunc) Handle(ctx context.Context, c *protocol.Conn, h protocol.Header, req kmsg.Request, respond func(protocol.Response)) {
	f(ctx, c, h, req, respond)
}

// serve runs a Server with h on a free 127.0.0.1 port until the test ends.
func serve(t *testing.T, srv *protocol.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}

type client struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c, br: bufio.NewReader(c)}
}

// frame is req framed with a v1 header and correlation id corr.
func frame(req kmsg.Request, corr int32) []byte {
	id := "test"
	b := encodeHeaderAndBody(req, corr, &id)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

func (c *client) write(b []byte) {
	c.t.Helper()
	if _, err := c.c.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

// read returns the correlation id and body of the next response frame.
func (c *client) read(d time.Duration) (int32, []byte, error) {
	_ = c.c.SetReadDeadline(time.Now().Add(d))
	f, err := protocol.ReadFrame(c.br, 1<<20)
	if err != nil {
		return 0, nil, err
	}
	if len(f) < 4 {
		return 0, nil, errors.New("short response")
	}
	return int32(binary.BigEndian.Uint32(f)), f[4:], nil
}

func (c *client) expectClosed() {
	c.t.Helper()
	_ = c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.br.ReadByte(); err == nil {
		c.t.Fatal("server answered instead of closing the connection")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		c.t.Fatal("server kept the connection open")
	}
}

func metadata() *kmsg.MetadataRequest {
	r := kmsg.NewPtrMetadataRequest()
	r.Version = 1
	return r
}

func acksZeroProduce() *kmsg.ProduceRequest {
	r := kmsg.NewPtrProduceRequest()
	r.Version = 3
	r.Acks = 0
	return r
}

// answer responds to any request with its empty response kind.
func answer(req kmsg.Request, respond func(protocol.Response)) {
	respond(protocol.Response{Msg: req.ResponseKind()})
}

// TestResponsesInRequestOrder: answers given in reverse order still go out in
// request order.
func TestResponsesInRequestOrder(t *testing.T) {
	var mu sync.Mutex
	var parked []func(protocol.Response)
	srv := &protocol.Server{Handler: handlerFunc(func(_ context.Context, _ *protocol.Conn, _ protocol.Header, req kmsg.Request, respond func(protocol.Response)) {
		mu.Lock()
		defer mu.Unlock()
		parked = append(parked, func(r protocol.Response) { respond(r) })
		if len(parked) == 5 {
			for i := len(parked) - 1; i >= 0; i-- {
				go parked[i](protocol.Response{Msg: req.ResponseKind()})
			}
		}
	})}
	c := dial(t, serve(t, srv))
	for corr := int32(1); corr <= 5; corr++ {
		c.write(frame(metadata(), corr))
	}
	for want := int32(1); want <= 5; want++ {
		corr, _, err := c.read(5 * time.Second)
		if err != nil {
			t.Fatalf("waiting for answer %d: %v", want, err)
		}
		if corr != want {
			t.Fatalf("answer %d came where %d was due", corr, want)
		}
	}
}

// TestLateAnswerSeesEarlierAnswers: an answer given as Late is computed only
// once the answers of the requests read before it are written, so it sees
// what those requests changed, however long they took.
func TestLateAnswerSeesEarlierAnswers(t *testing.T) {
	var mu sync.Mutex
	state := int32(1) // the controller, changed by the first request
	srv := &protocol.Server{Handler: handlerFunc(func(_ context.Context, _ *protocol.Conn, h protocol.Header, req kmsg.Request, respond func(protocol.Response)) {
		if h.CorrelationID == 1 {
			go func() { // a produce that waits for its acknowledgements
				time.Sleep(300 * time.Millisecond)
				mu.Lock()
				state = 2
				mu.Unlock()
				respond(protocol.Response{Msg: req.ResponseKind()})
			}()
			return
		}
		respond(protocol.Response{Late: func() kmsg.Response {
			mu.Lock()
			defer mu.Unlock()
			resp := req.ResponseKind().(*kmsg.MetadataResponse)
			resp.ControllerID = state
			return resp
		}})
	})}
	c := dial(t, serve(t, srv))
	c.write(append(frame(metadata(), 1), frame(metadata(), 2)...))
	for want := int32(1); want <= 2; want++ {
		corr, body, err := c.read(5 * time.Second)
		if err != nil || corr != want {
			t.Fatalf("answer %d: corr %d, %v", want, corr, err)
		}
		if corr == 2 {
			resp := kmsg.NewPtrMetadataResponse()
			resp.Version = 1
			if err := resp.ReadFrom(body); err != nil {
				t.Fatal(err)
			}
			if resp.ControllerID != 2 {
				t.Fatalf("the late answer was computed before the earlier answer (controller %d)", resp.ControllerID)
			}
		}
	}
}

// TestAnswerBeforeNoneIsFlushed: an answer followed by a request that gets no
// answer (acks=0 produce), both in one write, reaches the client without waiting
// for a later request. The first answer is given only once the second request has
// been handled, as when a broker answers from another goroutine.
func TestAnswerBeforeNoneIsFlushed(t *testing.T) {
	var mu sync.Mutex
	var pending func()
	srv := &protocol.Server{Handler: handlerFunc(func(_ context.Context, _ *protocol.Conn, h protocol.Header, req kmsg.Request, respond func(protocol.Response)) {
		mu.Lock()
		defer mu.Unlock()
		if h.Key == 0 {
			respond(protocol.Response{None: true})
			if pending != nil {
				pending()
				pending = nil
			}
			return
		}
		pending = func() { answer(req, respond) }
	})}
	c := dial(t, serve(t, srv))
	for round := int32(0); round < 5; round++ {
		c.write(append(frame(metadata(), 2*round+1), frame(acksZeroProduce(), 2*round+2)...))
		corr, _, err := c.read(5 * time.Second)
		if err != nil {
			t.Fatalf("round %d: answer before an acks=0 produce not sent: %v", round, err)
		}
		if corr != 2*round+1 {
			t.Fatalf("round %d: answer %d, want %d", round, corr, 2*round+1)
		}
	}
}

// TestHandlerPanicClosesOnlyThatConnection: a panicking handler costs its
// connection, not the server.
func TestHandlerPanicClosesOnlyThatConnection(t *testing.T) {
	srv := &protocol.Server{Handler: handlerFunc(func(_ context.Context, _ *protocol.Conn, h protocol.Header, req kmsg.Request, respond func(protocol.Response)) {
		if h.Key == 19 {
			panic("handler bug")
		}
		answer(req, respond)
	})}
	addr := serve(t, srv)
	bad := dial(t, addr)
	create := kmsg.NewPtrCreateTopicsRequest()
	create.Version = 1
	bad.write(frame(create, 1))
	bad.expectClosed()
	good := dial(t, addr)
	good.write(frame(metadata(), 7))
	if corr, _, err := good.read(5 * time.Second); err != nil || corr != 7 {
		t.Fatalf("another connection after a panic: %d, %v", corr, err)
	}
}

// TestApiVersionsTooNewAnsweredInV0: versions above the served ApiVersions range,
// whether kmsg knows them or not, get a v0 UNSUPPORTED_VERSION answer listing the
// served keys (KIP-511), and the connection stays open for the retry.
func TestApiVersionsTooNewAnsweredInV0(t *testing.T) {
	keys := []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MinVersion: 0, MaxVersion: 3}, {ApiKey: 3, MinVersion: 0, MaxVersion: 9}}
	srv := &protocol.Server{
		APIKeys: func() []kmsg.ApiVersionsResponseApiKey { return keys },
		Handler: handlerFunc(func(_ context.Context, _ *protocol.Conn, _ protocol.Header, req kmsg.Request, respond func(protocol.Response)) {
			answer(req, respond)
		}),
	}
	c := dial(t, serve(t, srv))
	for i, v := range []int16{4, 5, 99} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		corr := int32(10 + i)
		if v > req.MaxVersion() {
			// Not encodable by kmsg at this version: a v3 body under a v99 header.
			req.Version = 3
			b := encodeHeaderAndBody(req, corr, nil)
			binary.BigEndian.PutUint16(b[2:], uint16(v))
			c.write(append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...))
		} else {
			c.write(frame(req, corr))
		}
		got, body, err := c.read(5 * time.Second)
		if err != nil || got != corr {
			t.Fatalf("ApiVersions v%d: answer %d, %v", v, got, err)
		}
		resp := kmsg.NewPtrApiVersionsResponse()
		if err := resp.ReadFrom(body); err != nil {
			t.Fatalf("ApiVersions v%d: answer is not v0: %v", v, err)
		}
		if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) != len(keys) {
			t.Fatalf("ApiVersions v%d: error %v with %d keys", v, kerr.ErrorForCode(resp.ErrorCode), len(resp.ApiKeys))
		}
	}
}

// TestFrameLimit: a frame above MaxRequestSize closes the connection; one at the
// limit is served.
func TestFrameLimit(t *testing.T) {
	srv := &protocol.Server{MaxRequestSize: 64, Handler: handlerFunc(func(_ context.Context, _ *protocol.Conn, _ protocol.Header, req kmsg.Request, respond func(protocol.Response)) {
		answer(req, respond)
	})}
	addr := serve(t, srv)
	ok := dial(t, addr)
	m := kmsg.NewPtrMetadataRequest()
	m.Version = 1
	f := frame(m, 1)
	if len(f)-4 > 64 {
		t.Fatalf("test frame of %d bytes is over the limit", len(f)-4)
	}
	ok.write(f)
	if corr, _, err := ok.read(5 * time.Second); err != nil || corr != 1 {
		t.Fatalf("frame under the limit: %d, %v", corr, err)
	}
	big := dial(t, addr)
	big.write(append([]byte{0, 0, 0, 65}, make([]byte, 65)...))
	big.expectClosed()
}

// TestHangUpCancelsParkedRequests: when the client goes away, the context of its
// parked requests ends, so they need not wait out their timeouts.
func TestHangUpCancelsParkedRequests(t *testing.T) {
	cancelled := make(chan struct{})
	srv := &protocol.Server{Handler: handlerFunc(func(ctx context.Context, _ *protocol.Conn, _ protocol.Header, req kmsg.Request, respond func(protocol.Response)) {
		go func() {
			<-ctx.Done()
			close(cancelled)
			answer(req, respond)
		}()
	})}
	c := dial(t, serve(t, srv))
	c.write(frame(metadata(), 1))
	c.c.Close()
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the parked request's context was not cancelled after the client hung up")
	}
}

// TestShutdownLetsParkedRequestsAnswer: Shutdown signals Draining, a parked request
// answers, its client gets the answer, and Shutdown returns without its deadline.
func TestShutdownLetsParkedRequestsAnswer(t *testing.T) {
	srv := &protocol.Server{Handler: handlerFunc(func(_ context.Context, c *protocol.Conn, _ protocol.Header, req kmsg.Request, respond func(protocol.Response)) {
		go func() {
			<-c.Draining()
			answer(req, respond)
		}()
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	c := dial(t, ln.Addr().String())
	c.write(frame(metadata(), 3))
	// The request is parked once the server has read it; nothing comes back yet.
	if _, _, err := c.read(200 * time.Millisecond); err == nil {
		t.Fatal("a parked request was answered before shutdown")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		corr, _, err := c.read(20 * time.Second)
		if err == nil && corr != 3 {
			err = errors.New("wrong correlation id")
		}
		got <- err
	}()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with a parked request: %v", err)
	}
	if err := <-got; err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("parked request's answer: %v", err)
	} else if err != nil {
		t.Fatal("connection closed before the parked request was answered")
	}
}
