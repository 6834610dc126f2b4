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

	"github.com/ktoolhq/ktool/internal/supervisor/control"
)

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
	var req control.Request
	if err := json.NewDecoder(io.LimitReader(conn, control.MaxRequest)).Decode(&req); err != nil {
		writeResponse(conn, control.Response{Error: fmt.Sprintf("bad request: %v", err)})
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	var resp control.Response
	switch req.Op {
	case control.OpStatus:
		resp.Brokers = s.Status()
	case control.OpKill:
		if err := s.Kill(req.Broker); err != nil {
			resp.Error = err.Error()
		}
		resp.Brokers = s.Status()
	case control.OpStart:
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
	case control.OpShutdown:
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

func writeResponse(conn net.Conn, resp control.Response) {
	_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_ = json.NewEncoder(conn).Encode(resp)
}

// Listen opens the control socket at path, replacing a stale one left by a
// supervisor that died; it refuses when another supervisor answers there.
func Listen(ctx context.Context, path string) (net.Listener, error) {
	if _, err := os.Stat(path); err == nil {
		if _, err := control.Call(ctx, path, control.Request{Op: control.OpStatus}); err == nil {
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
