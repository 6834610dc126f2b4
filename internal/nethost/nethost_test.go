package nethost

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// sink counts the numbered datagrams that reach h on port 7001, keeping
// their order and their delays (the sender stamps its clock: both ends are
// this process).
type sink struct {
	mu    sync.Mutex
	seqs  []uint64
	delay []time.Duration
	addr  string
}

func newSink(t *testing.T, h *Host) *sink {
	t.Helper()
	var pc net.PacketConn
	if err := h.inside(func() error {
		var err error
		pc, err = net.ListenPacket("udp", h.IP()+":7001")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	// Bursts of thousands of datagrams must not overflow the socket.
	raw, err := pc.(*net.UDPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	raw.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20) })
	s := &sink{addr: pc.LocalAddr().String()}
	go func() {
		buf := make([]byte, 64)
		for {
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if n != 16 {
				continue
			}
			sent := time.Unix(0, int64(binary.BigEndian.Uint64(buf[8:])))
			s.mu.Lock()
			s.seqs = append(s.seqs, binary.BigEndian.Uint64(buf))
			s.delay = append(s.delay, time.Since(sent))
			s.mu.Unlock()
		}
	}()
	return s
}

// take waits until n datagrams arrived (10 s at most) and returns them,
// emptying the sink.
func (s *sink) take(t *testing.T, n int) ([]uint64, []time.Duration) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		got := len(s.seqs)
		if got >= n {
			seqs, delay := s.seqs, s.delay
			s.seqs, s.delay = nil, nil
			s.mu.Unlock()
			return seqs, delay
		}
		s.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d datagrams arrived in 10 s", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// send sends n numbered datagrams from h to addr, gap apart.
func send(t *testing.T, h *Host, addr string, n int, gap time.Duration) {
	t.Helper()
	c, err := h.DialContext(context.Background(), "udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A held packet counts against its socket's send buffer until it is
	// let go: without room for the whole burst, Write would block.
	raw, err := c.(*net.UDPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	raw.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 16<<20) })
	for i := range n {
		b := binary.BigEndian.AppendUint64(nil, uint64(i))
		b = binary.BigEndian.AppendUint64(b, uint64(time.Now().UnixNano()))
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
		if gap > 0 {
			time.Sleep(gap)
		}
	}
}

// inversions counts the datagrams that arrived after one numbered higher.
func inversions(seqs []uint64) int {
	n := 0
	var top uint64
	for i, s := range seqs {
		if i > 0 && s < top {
			n++
		}
		top = max(top, s)
	}
	return n
}

// TestDelay sends numbered datagrams through delays: every one arrives (a
// delay loses nothing), none sooner than its least delay, in order without
// jitter and out of order with it, only to the hosts delayed; the kernel's
// queue overflowing lets packets through undelayed; Heal releases what is
// held at once; a queue gone (its process killed) lets packets pass.
func TestDelay(t *testing.T) {
	l := New(t)
	a, b, c := l.Host("a"), l.Host("b"), l.Host("c")
	toB, toC := newSink(t, b), newSink(t, c)

	send(t, a, toB.addr, 100, 0)
	if seqs, _ := toB.take(t, 100); inversions(seqs) != 0 {
		t.Fatalf("undelayed datagrams reordered: %v", seqs)
	}

	// A link: a to b only.
	if err := l.Delay(a, Delay{Base: 100 * time.Millisecond}, b); err != nil {
		t.Fatal(err)
	}
	if err := l.Delay(a, Delay{Base: time.Millisecond}); err == nil {
		t.Fatal("a second delay on one host accepted")
	}
	send(t, a, toB.addr, 100, 0)
	send(t, a, toC.addr, 100, 0)
	seqs, delays := toB.take(t, 100)
	if n := inversions(seqs); n != 0 {
		t.Errorf("delay without jitter reordered %d datagrams", n)
	}
	if d := slices.Min(delays); d < 100*time.Millisecond {
		t.Errorf("a datagram held %v, less than the delay of 100 ms", d)
	}
	toC.take(t, 100)
	if n := l.Delayed(); n != 100 {
		t.Errorf("%d packets held, want the 100 sent to b (none of those to c)", n)
	}
	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}

	// The whole host, with jitter: reordered.
	if err := l.Delay(a, Delay{Base: 100 * time.Millisecond, Jitter: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	send(t, a, toB.addr, 200, time.Millisecond)
	seqs, delays = toB.take(t, 200)
	if n := inversions(seqs); n == 0 {
		t.Errorf("a delay of 100 ms ± 50 ms reordered none of 200 datagrams 1 ms apart")
	}
	if d := slices.Min(delays); d < 50*time.Millisecond {
		t.Errorf("a datagram held %v, less than the least delay of 50 ms", d)
	}
	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}
	send(t, a, toB.addr, 100, 0)
	if seqs, _ := toB.take(t, 100); inversions(seqs) != 0 {
		t.Fatalf("datagrams reordered after heal: %v", seqs)
	}
	if n := l.Delayed(); n != 300 {
		t.Errorf("%d packets held, want 300 (none after heal)", n)
	}

	// Long delays: the kernel holds queueMaxLen packets and lets the rest
	// through undelayed; Heal releases the held ones long before their time.
	if err := l.Delay(a, Delay{Base: time.Minute}); err != nil {
		t.Fatal(err)
	}
	const burst = 2 * queueMaxLen
	send(t, a, toB.addr, burst, 0)
	seqs, _ = toB.take(t, burst-queueMaxLen)
	toB.mu.Lock()
	toB.seqs, toB.delay = seqs, nil
	toB.mu.Unlock()
	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}
	if seqs, _ := toB.take(t, burst); len(seqs) != burst {
		t.Fatalf("%d datagrams arrived, want %d", len(seqs), burst)
	}

	// The queue gone while its rule stays (as when the test process is
	// killed): --queue-bypass lets packets pass.
	if err := l.Delay(a, Delay{Base: time.Minute}); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	if err := l.queues[a].close(); err != nil {
		t.Error(err)
	}
	delete(l.queues, a)
	l.mu.Unlock()
	send(t, a, toB.addr, 100, 0)
	toB.take(t, 100)
	if err := run(append(a.Exec(), "iptables", "-w", "-F", "OUTPUT")...); err != nil {
		t.Fatal(err)
	}

	// TCP through a delay of 300 ms on a's packets.
	addr := echo(t, b)
	if err := l.Delay(a, Delay{Base: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := reach(a, addr); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("round trip with a 300 ms delay took %v", d)
	}
	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}
}

func TestDelayRejectsBadValues(t *testing.T) {
	for _, d := range []Delay{{Base: -time.Millisecond}, {Base: time.Millisecond, Jitter: 2 * time.Millisecond}, {Base: 0, Jitter: -1}} {
		if _, err := openQueue(nil, d); err == nil {
			t.Errorf("delay %v accepted", d)
		}
	}
}

func TestParseMessagesChecksLengths(t *testing.T) {
	good := message(nfqnlMsgPacket, 0, 7, attr(nfqaPacketHdr, []byte{0, 0, 0, 42, 8, 0, 3}))
	msgs, err := parseMessages(good)
	if err != nil || len(msgs) != 1 || msgs[0].seq != 7 {
		t.Fatalf("parse: %v %v", msgs, err)
	}
	if id, ok := packetID(msgs[0].body); !ok || id != 42 {
		t.Fatalf("packet id %d %v, want 42", id, ok)
	}
	long := slices.Clone(good)
	binary.NativeEndian.PutUint32(long, uint32(len(good)+1))
	if _, err := parseMessages(long); err == nil {
		t.Error("a message longer than the datagram accepted")
	}
	if _, err := parseMessages(good[:10]); err == nil {
		t.Error("a short header accepted")
	}
	badAttr := slices.Clone(msgs[0].body)
	binary.NativeEndian.PutUint16(badAttr[4:], 200)
	if _, ok := packetID(badAttr); ok {
		t.Error("an attribute longer than the message accepted")
	}
	if _, ok := packetID(msgs[0].body[:6]); ok {
		t.Error("a truncated attribute accepted")
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
