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
// host for its whole life, whichever thread uses it later.
func (h *Host) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := h.inside(func() error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// Dial is DialContext bounded by timeout, in the shape of go-zookeeper's
// dialer.
func (h *Host) Dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return h.DialContext(ctx, network, addr)
}

// inside runs f on a thread in the host's network namespace, then moves the
// thread back. The thread must not die instead: a child process started
// with Pdeathsig (brokerproc, zktest) is killed when the thread that forked
// it exits, and any thread may have forked one. Only when the way back fails
// does the thread stay locked and die with its goroutine.
func (h *Host) inside(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := unix.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("nethost: this thread's namespace: %w", err)
			return
		}
		defer unix.Close(home)
		if err := h.enter(); err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		err = f()
		if unix.Setns(home, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
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
	var ln net.Listener
	err := h.inside(func() error {
		var err error
		ln, err = net.Listen(network, addr)
		return err
	})
	return ln, err
}
