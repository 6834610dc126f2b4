package nethost

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// echo serves one-line echoes on h:port until the test ends.
func echo(t *testing.T, h *Host) string {
	t.Helper()
	ln, err := h.Listen("tcp", h.IP()+":7000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// reach reports whether from can open a connection to addr and get an echo
// within a second.
func reach(from *Host, addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := from.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("ping")); err != nil {
		return err
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if !bytes.Equal(buf, []byte("ping")) {
		return errors.New("wrong echo")
	}
	return nil
}

func TestFaults(t *testing.T) {
	l := New(t)
	a, b, c := l.Host("a"), l.Host("b"), l.Host("c")
	if a.IP() == b.IP() {
		t.Fatal("two hosts share an address")
	}
	addrA, addrB := echo(t, a), echo(t, b)
	check := func(what string, from *Host, addr string, want bool) {
		t.Helper()
		err := reach(from, addr)
		if (err == nil) != want {
			t.Fatalf("%s: %s reaching %s: %v, want reachable=%v\nrules:\n%s", what, from.Name(), addr, err, want, l.Rules())
		}
	}
	check("start", c, addrA, true)
	check("start", a, addrB, true)

	if err := l.Isolate(a); err != nil {
		t.Fatal(err)
	}
	check("a isolated", c, addrA, false)
	check("a isolated", a, addrB, false)
	check("a isolated", c, addrB, true)
	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}
	check("healed", c, addrA, true)

	// One way: nothing from a reaches b, so a cannot connect to b, and b's
	// connection to a gets no answer either; c still reaches both.
	if err := l.Cut([]*Host{a}, []*Host{b}); err != nil {
		t.Fatal(err)
	}
	check("a->b cut", a, addrB, false)
	check("a->b cut", b, addrA, false)
	check("a->b cut", c, addrB, true)
	check("a->b cut", a, "["+c.IP()+"]:1", false)
	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}

	if err := l.Loss(a, 100); err != nil {
		t.Fatal(err)
	}
	check("100% loss on a", c, addrA, false)
	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}
	// Half the packets lost, drawn at random per packet.
	if err := l.Loss(a, 50); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(l.Rules(), "numgen random mod 100 < 50") {
		t.Fatalf("no random drop rule:\n%s", l.Rules())
	}
	if err := l.Loss(a, 0); err == nil {
		t.Fatal("loss of 0% accepted")
	}
	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}
	check("healed", c, addrA, true)

	// A process started under Exec runs in the host.
	argv := append(a.Exec(), "ip", "-4", "-o", "addr", "show", "dev", "eth0")
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), a.IP()+"/24") {
		t.Fatalf("ip addr in host a: %s %v", out, err)
	}
}

func TestNetem(t *testing.T) {
	l := New(t)
	a, b := l.Host("a"), l.Host("b")
	if err := NetemAvailable(); err != nil {
		t.Skipf("\n\n*** SKIPPING %s: %v ***\n\n", t.Name(), err)
	}
	addr := echo(t, b)
	if err := l.Netem(a, "delay 300ms"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := reach(a, addr); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("round trip with 300 ms delay took %v", d)
	}
	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}
}

func TestSweepStale(t *testing.T) {
	if Available() != nil {
		t.Skip("no network namespaces here (see TestFaults)")
	}
	// A namespace named for a process that cannot exist (beyond pid_max) is
	// removed; those of this process are kept.
	dead := prefix + "999999999-1-x"
	if err := run("ip", "netns", "add", dead); err != nil {
		t.Fatal(err)
	}
	l := New(t)
	l.Host("a")
	if err := SweepStale(); err != nil {
		t.Fatal(err)
	}
	out, _ := output("ip", "netns", "list")
	if strings.Contains(out, dead) {
		run("ip", "netns", "del", dead)
		t.Fatalf("stale namespace %s not removed:\n%s", dead, out)
	}
	if !strings.Contains(out, l.name+"a") {
		t.Fatalf("this run's namespace %s was removed:\n%s", l.name+"a", out)
	}
}

// TestDialLeavesThreadsHome checks that dialing from a host moves its thread
// back: every thread of the process is in the process's own namespace after
// many dials, and none of them died (a dying thread kills the children it
// forked with Pdeathsig).
func TestDialLeavesThreadsHome(t *testing.T) {
	l := New(t)
	a, b := l.Host("a"), l.Host("b")
	addr := echo(t, b)
	home, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	threads := func() map[string]bool {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, e := range ents {
			out[e.Name()] = true
		}
		return out
	}
	before := threads()
	for range 30 {
		if err := reach(a, addr); err != nil {
			t.Fatal(err)
		}
	}
	after := threads()
	for tid := range before {
		if !after[tid] {
			t.Errorf("thread %s died while dialing from a host", tid)
		}
	}
	for tid := range after {
		ns, err := os.Readlink("/proc/self/task/" + tid + "/ns/net")
		if err == nil && ns != home {
			t.Errorf("thread %s left in namespace %s (the process is in %s)", tid, ns, home)
		}
	}
}
