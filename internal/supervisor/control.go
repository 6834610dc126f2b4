package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// Operations of the control protocol.
const (
	OpStatus   = "status"   // report every broker
	OpKill     = "kill"     // Kill(Broker)
	OpStart    = "start"    // Start(Broker) and wait until it is ready
	OpShutdown = "shutdown" // stop every broker cleanly and exit
)

// Request is one control call.
type Request struct {
	Op     string `json:"op"`
	Broker int32  `json:"broker"`
}

// Response answers a Request; Error is set when it failed.
type Response struct {
	Error   string        `json:"error,omitempty"`
	Brokers []BrokerState `json:"brokers,omitempty"`
}

// maxRequest bounds what a control connection may send.
const maxRequest = 4 << 10

// Serve answers control requests on ln until ctx ends or a shutdown request
// arrives, then closes ln and waits for the connections being answered.
// Shutdown requests are answered once Serve's caller has stopped the
// brokers: Serve returns ErrShutdown and the caller closes the supervisor.
func (s *Supervisor) Serve(ctx context.Context, ln net.Listener) error {
	shutdown := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	go func() {
		<-shutdown
		ln.Close()
	}()
	defer once.Do(func() { close(shutdown) })
	var err error
	for {
		conn, aerr := ln.Accept()
		if aerr != nil {
			select {
			case <-shutdown:
				err = ErrShutdown
			default:
				if ctx.Err() == nil {
					err = aerr
				}
			}
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.answer(ctx, conn, func() { once.Do(func() { close(shutdown) }) })
		}()
	}
	wg.Wait()
	return err
}

// ErrShutdown is returned by Serve when a client asked the supervisor to stop.
var ErrShutdown = errors.New("supervisor: shutdown requested")

func (s *Supervisor) answer(ctx context.Context, conn net.Conn, requestShutdown func()) {
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var req Request
	if err := json.NewDecoder(io.LimitReader(conn, maxRequest)).Decode(&req); err != nil {
		writeResponse(conn, Response{Error: fmt.Sprintf("bad request: %v", err)})
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	var resp Response
	switch req.Op {
	case OpStatus:
		resp.Brokers = s.Status()
	case OpKill:
		if err := s.Kill(req.Broker); err != nil {
			resp.Error = err.Error()
		}
		resp.Brokers = s.Status()
	case OpStart:
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := s.Start(sctx, req.Broker)
		if err == nil {
			err = s.WaitReady(sctx, req.Broker)
		}
		cancel()
		if err != nil {
			resp.Error = err.Error()
		}
		resp.Brokers = s.Status()
	case OpShutdown:
		// Answered before the brokers stop: the caller waits for the
		// process to exit, which is the real sign that they have.
		resp.Brokers = s.Status()
		writeResponse(conn, resp)
		requestShutdown()
		return
	default:
		resp.Error = fmt.Sprintf("unknown operation %q", req.Op)
	}
	writeResponse(conn, resp)
}

func writeResponse(conn net.Conn, resp Response) {
	_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_ = json.NewEncoder(conn).Encode(resp)
}

// Listen opens the control socket at path, replacing a stale one left by a
// supervisor that died; it refuses when another supervisor answers there.
func Listen(ctx context.Context, path string) (net.Listener, error) {
	if _, err := os.Stat(path); err == nil {
		if _, err := Call(ctx, path, Request{Op: OpStatus}); err == nil {
			return nil, fmt.Errorf("a supervisor is already running on %s", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	return ln, nil
}

// Call sends one request to the supervisor listening on path. A Response
// carrying an error is returned with that error.
func Call(ctx context.Context, path string, req Request) (Response, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return Response{}, fmt.Errorf("supervisor not reachable on %s: %w", path, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return Response{}, fmt.Errorf("supervisor on %s: %w", path, err)
	}
	var resp Response
	if err := json.NewDecoder(conn).Decode(&resp); err != nil {
		if ctx.Err() != nil {
			return Response{}, ctx.Err()
		}
		return Response{}, fmt.Errorf("supervisor on %s: %w", path, err)
	}
	if resp.Error != "" {
		return resp, errors.New(resp.Error)
	}
	return resp, nil
}
