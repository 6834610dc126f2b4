package zkstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/internal/zktest"
)

// cutConn is a connection to the real server that can go silent at once
// (cut): what is written is lost, nothing more is read, and the server
// sees no close, as when a link drops every packet.
type cutConn struct {
	net.Conn
	cut atomic.Bool
}

func (c *cutConn) Write(b []byte) (int, error) {
	if c.cut.Load() {
		return len(b), nil
	}
	return c.Conn.Write(b)
}

func (c *cutConn) Read(b []byte) (int, error) {
	for {
		n, err := c.Conn.Read(b)
		if err != nil || !c.cut.Load() {
			return n, err
		}
	}
}

// silentLab dials a real ZooKeeper server and a second server that is
// silent once armed: its dials hang until their timeout (dropped SYNs), or
// (muted) it accepts connections and never answers. Until armed, the second
// server refuses at once.
type silentLab struct {
	real   string
	silent string
	muted  bool
	armed  atomic.Bool

	mu   sync.Mutex
	last *cutConn // the latest connection to the real server
}

func (l *silentLab) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	if addr == l.silent && !l.muted {
		if !l.armed.Load() {
			return nil, errors.New("connection refused")
		}
		time.Sleep(timeout)
		return nil, fmt.Errorf("dial %s: %w", addr, os.ErrDeadlineExceeded)
	}
	conn, err := net.DialTimeout(network, addr, timeout)
	if err != nil || addr != l.real {
		return conn, err
	}
	c := &cutConn{Conn: conn}
	l.mu.Lock()
	l.last = c
	l.mu.Unlock()
	return c, nil
}

// mutedServer accepts connections and, once armed, holds them without a
// word; before, it closes them at once.
func mutedServer(t *testing.T, armed *atomic.Bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	var mu sync.Mutex
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !armed.Load() {
				c.Close()
				continue
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	return ln.Addr().String()
}

// TestSessionSurvivesSilentServer loses the session's server silently while
// the only other server listed is silent too, dropped or muted: the client
// must get past it and back to the real server within the session timeout
// (4 s; the server expires the session 4 s to 4.25 s after its last ping,
// rounding up to its 250 ms tick). go-zookeeper alone notices the loss after 2.67 s, then spends 1 s
// on a dropped dial and 1 s asleep before trying the real server again, or
// 26.7 s waiting for a muted server's answer: both lose the session.
func TestSessionSurvivesSilentServer(t *testing.T) {
	srv := zktest.Start(t)
	const session = 16 * zktest.TickTime
	for _, muted := range []bool{false, true} {
		name := "dropped"
		if muted {
			name = "muted"
		}
		t.Run(name, func(t *testing.T) {
			lab := &silentLab{real: srv.Addr(), muted: muted}
			lab.silent = "127.0.0.1:9" // dialled through lab.dial only
			if muted {
				lab.silent = mutedServer(t, &lab.armed)
			}
			c, err := NewConnector(lab.real+","+lab.silent, session, nil)
			if err != nil {
				t.Fatal(err)
			}
			c.dial = lab.dial
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := c.Connect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			path := "/eph-" + name
			if _, err := s.Create(ctx, path, nil, coord.Ephemeral); err != nil {
				t.Fatal(err)
			}
			lab.armed.Store(true)
			lab.mu.Lock()
			cut := lab.last
			lab.mu.Unlock()
			start := time.Now()
			cut.cut.Store(true)
			for {
				ok, st, err := s.Exists(ctx, path)
				if err == nil {
					if !ok || st.EphemeralOwner != s.SessionID() {
						t.Fatalf("after the reconnection: ephemeral %v, owner %#x, session %#x", ok, st.EphemeralOwner, s.SessionID())
					}
					lab.mu.Lock()
					again := lab.last != cut
					lab.mu.Unlock()
					if again {
						break
					}
				} else if !errors.Is(err, coord.ErrConnectionLoss) {
					t.Fatalf("%v after the cut: %v", time.Since(start).Round(time.Millisecond), err)
				}
				select {
				case <-ctx.Done():
					t.Fatal("no reconnection")
				case <-time.After(20 * time.Millisecond):
				}
			}
			t.Logf("back on the real server with the same session %v after the cut", time.Since(start).Round(time.Millisecond))
			select {
			case <-s.Expired():
				t.Fatal("the session expired")
			default:
			}
		})
	}
}
