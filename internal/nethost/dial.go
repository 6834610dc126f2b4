package nethost

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// DialContext opens a connection from the host: the socket is created on a
// thread that entered the host's network namespace, so it belongs to the
// host for its whole life, whichever thread uses it later. The thread is
// never returned to the Go runtime (the goroutine ends while locked to it).
func (h *Host) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	type result struct {
		conn net.Conn
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		if err := h.enter(); err != nil {
			ch <- result{nil, err}
			return
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		ch <- result{c, err}
	}()
	r := <-ch
	return r.conn, r.err
}

// Dial is DialContext bounded by timeout, in the shape of go-zookeeper's
// dialer.
func (h *Host) Dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return h.DialContext(ctx, network, addr)
}

// enter moves the calling thread into the host's network namespace.
func (h *Host) enter() error {
	fd, err := unix.Open("/run/netns/"+h.ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("nethost: open namespace %s: %w", h.ns, err)
	}
	defer unix.Close(fd)
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("nethost: enter namespace %s: %w", h.ns, err)
	}
	return nil
}

// Listen opens a listener in the host, as DialContext opens a connection.
func (h *Host) Listen(network, addr string) (net.Listener, error) {
	type result struct {
		ln  net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		if err := h.enter(); err != nil {
			ch <- result{nil, err}
			return
		}
		ln, err := net.Listen(network, addr)
		ch <- result{ln, err}
	}()
	r := <-ch
	return r.ln, r.err
}
