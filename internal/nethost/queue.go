package nethost

import (
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Delay and reordering are made in user space, not with tc netem (which
// many kernels, this project's CI machine's among them, are built without):
// an iptables NFQUEUE rule in the delayed host hands each packet it sends to
// a netfilter queue of that host's namespace, and a delayQueue of the test
// process holds it there for its delay before letting it go. Packets whose
// delays differ by more than the gap between them come out in another
// order: jitter reorders. The kernel keeps the packets; the test process
// keeps only their ids and release times.
//
// The protocol is nfnetlink_queue (linux/netfilter/nfnetlink_queue.h): a
// NETLINK_NETFILTER socket opened in the namespace binds queue 0 in
// copy-meta mode (the payload is not copied out), and a verdict by packet
// id (NFQNL_MSG_VERDICT) releases each packet, in any order.

// Delay is the time each delayed packet is held: Base, plus or minus up to
// Jitter, drawn uniformly and independently per packet.
type Delay struct {
	Base   time.Duration
	Jitter time.Duration
}

func (d Delay) String() string { return fmt.Sprintf("%v ± %v", d.Base, d.Jitter) }

const (
	// queueNum is the netfilter queue used in every host (each namespace
	// has its own queues).
	queueNum = 0
	// queueMaxLen bounds the packets the kernel holds for one host: past
	// it, a packet passes undelayed (fail-open), so a delay never adds loss
	// and memory stays bounded (at most this many packets, 64 KiB at most
	// each with GSO).
	queueMaxLen = 1024
	// queueRcvBuf is the socket's receive buffer: a packet whose message
	// does not fit passes undelayed as well (fail-open).
	queueRcvBuf = 4 << 20
)

// nfnetlink_queue constants (linux/netfilter/nfnetlink.h,
// nfnetlink_queue.h, netfilter.h).
const (
	nfnlSubsysQueue = 3
	nfqnlMsgPacket  = 0
	nfqnlMsgVerdict = 1
	nfqnlMsgConfig  = 2

	nfqaPacketHdr  = 1
	nfqaVerdictHdr = 2

	nfqaCfgCmd      = 1
	nfqaCfgParams   = 2
	nfqaCfgQueueMax = 3
	nfqaCfgMask     = 4
	nfqaCfgFlags    = 5

	nfqnlCfgCmdBind  = 1
	nfqnlCopyMeta    = 1
	nfqaCfgFFailOpen = 1
	nfqaCfgFGSO      = 4

	nfAccept = 1

	nlaTypeMask = ^uint16(unix.NLA_F_NESTED | unix.NLA_F_NET_BYTEORDER)
)

// delayQueue holds the packets queued in one host's namespace.
type delayQueue struct {
	fd    int
	delay Delay
	seq   atomic.Uint32

	mu       sync.Mutex
	rng      *rand.Rand
	held     heldHeap
	n        uint64 // packets taken, to release equal times in order
	stopping bool
	wake     chan struct{}

	queued   atomic.Uint64 // packets received and held
	released atomic.Uint64 // verdicts sent
	errs     atomic.Uint64 // verdicts refused, malformed messages
	failed   atomic.Value  // the error that stopped the receiver, if any

	stop chan struct{}
	done sync.WaitGroup
}

type heldPacket struct {
	id uint32
	at time.Time
	n  uint64
}

type heldHeap []heldPacket

func (h heldHeap) Len() int { return len(h) }
func (h heldHeap) Less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].n < h[j].n
	}
	return h[i].at.Before(h[j].at)
}
func (h heldHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *heldHeap) Push(x any)   { *h = append(*h, x.(heldPacket)) }
func (h *heldHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// openQueue binds queue 0 of host h and starts holding what it gets.
func openQueue(h *Host, d Delay) (*delayQueue, error) {
	if d.Base < 0 || d.Jitter < 0 || d.Jitter > d.Base {
		return nil, fmt.Errorf("nethost: delay %v: want 0 <= jitter <= base", d)
	}
	q := &delayQueue{fd: -1, delay: d, wake: make(chan struct{}, 1), stop: make(chan struct{}),
		rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x6e6671))}
	// A netlink socket belongs to the namespace it was created in, whichever
	// thread uses it later.
	if err := h.inside(func() error {
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
		if err != nil {
			return fmt.Errorf("nethost: netfilter netlink socket: %w", err)
		}
		q.fd = fd
		return nil
	}); err != nil {
		return nil, err
	}
	if err := q.setup(); err != nil {
		unix.Close(q.fd)
		return nil, fmt.Errorf("nethost: netfilter queue in %s: %w", h.ns, err)
	}
	q.done.Add(2)
	go q.receive()
	go q.releaser()
	return q, nil
}

func (q *delayQueue) setup() error {
	if err := unix.Bind(q.fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	if err := unix.SetsockoptInt(q.fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, queueRcvBuf); err != nil {
		return fmt.Errorf("receive buffer: %w", err)
	}
	// An overflowing socket must not fail the receiver: fail-open already
	// let the packet through.
	if err := unix.SetsockoptInt(q.fd, unix.SOL_NETLINK, unix.NETLINK_NO_ENOBUFS, 1); err != nil {
		return fmt.Errorf("NETLINK_NO_ENOBUFS: %w", err)
	}
	tv := unix.NsecToTimeval((100 * time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(q.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("receive timeout: %w", err)
	}
	cmd := []byte{nfqnlCfgCmdBind, 0, 0, 0}
	binary.BigEndian.PutUint16(cmd[2:], unix.AF_INET)
	if err := q.config(attr(nfqaCfgCmd, cmd)); err != nil {
		return fmt.Errorf("bind queue %d: %w (is another process bound to it?)", queueNum, err)
	}
	params := binary.BigEndian.AppendUint32(nil, 0) // copy range: nothing of the payload
	params = append(params, nfqnlCopyMeta)
	flags := binary.BigEndian.AppendUint32(nil, nfqaCfgFFailOpen|nfqaCfgFGSO)
	var cfg []byte
	cfg = append(cfg, attr(nfqaCfgParams, params)...)
	cfg = append(cfg, attr(nfqaCfgQueueMax, binary.BigEndian.AppendUint32(nil, queueMaxLen))...)
	cfg = append(cfg, attr(nfqaCfgMask, flags)...)
	cfg = append(cfg, attr(nfqaCfgFlags, flags)...)
	if err := q.config(cfg); err != nil {
		return fmt.Errorf("configure queue %d: %w", queueNum, err)
	}
	return nil
}

// config sends a config message with attrs and waits for the kernel's
// answer. It runs before the receiver starts, so the answer is the next
// message on the socket.
func (q *delayQueue) config(attrs []byte) error {
	seq := q.seq.Add(1)
	if err := unix.Sendto(q.fd, message(nfqnlMsgConfig, unix.NLM_F_REQUEST|unix.NLM_F_ACK, seq, attrs), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 8192)
	for {
		n, _, err := unix.Recvfrom(q.fd, buf, 0)
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			return fmt.Errorf("waiting for the answer: %w", err)
		}
		msgs, err := parseMessages(buf[:n])
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if m.typ != unix.NLMSG_ERROR || m.seq != seq {
				continue
			}
			if len(m.body) < 4 {
				return errors.New("short netlink error message")
			}
			if code := int32(binary.NativeEndian.Uint32(m.body)); code != 0 {
				return unix.Errno(-code)
			}
			return nil
		}
	}
}

// receive holds every packet the kernel queues until stop.
func (q *delayQueue) receive() {
	defer q.done.Done()
	buf := make([]byte, 1<<16)
	for {
		select {
		case <-q.stop:
			return
		default:
		}
		n, _, err := unix.Recvfrom(q.fd, buf, 0)
		if err != nil {
			if err == unix.EAGAIN || err == unix.EINTR {
				continue
			}
			q.failed.Store(err)
			return
		}
		q.take(buf[:n], time.Now())
	}
}

// take holds the packets of one datagram from the kernel.
func (q *delayQueue) take(b []byte, now time.Time) {
	msgs, err := parseMessages(b)
	if err != nil {
		q.errs.Add(1)
		return
	}
	for _, m := range msgs {
		if m.typ == unix.NLMSG_ERROR {
			// A verdict the kernel refused.
			q.errs.Add(1)
			continue
		}
		if m.typ != nfnlSubsysQueue<<8|nfqnlMsgPacket {
			continue
		}
		id, ok := packetID(m.body)
		if !ok {
			q.errs.Add(1)
			continue
		}
		q.queued.Add(1)
		q.mu.Lock()
		at := now.Add(q.delay.Base)
		if q.delay.Jitter > 0 {
			at = at.Add(time.Duration(q.rng.Int64N(2*int64(q.delay.Jitter)+1)) - q.delay.Jitter)
		}
		stopping := q.stopping
		if !stopping {
			q.n++
			heap.Push(&q.held, heldPacket{id: id, at: at, n: q.n})
		}
		q.mu.Unlock()
		if stopping {
			q.verdict(id)
			continue
		}
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
}

// releaser lets each held packet go at its time, and every one at stop.
func (q *delayQueue) releaser() {
	defer q.done.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		q.mu.Lock()
		now := time.Now()
		var due []uint32
		for len(q.held) > 0 && (q.stopping || !q.held[0].at.After(now)) {
			due = append(due, heap.Pop(&q.held).(heldPacket).id)
		}
		next := time.Duration(-1)
		if len(q.held) > 0 {
			next = q.held[0].at.Sub(now)
		}
		stopping := q.stopping
		q.mu.Unlock()
		for _, id := range due {
			q.verdict(id)
		}
		if stopping {
			return
		}
		// Since Go 1.23 a stopped or reset timer delivers no stale tick.
		if next >= 0 {
			timer.Reset(next)
		} else {
			timer.Stop()
		}
		select {
		case <-q.wake:
		case <-timer.C:
		case <-q.stop:
		}
	}
}

// verdict accepts packet id.
func (q *delayQueue) verdict(id uint32) {
	v := binary.BigEndian.AppendUint32(nil, nfAccept)
	v = binary.BigEndian.AppendUint32(v, id)
	m := message(nfqnlMsgVerdict, unix.NLM_F_REQUEST, q.seq.Add(1), attr(nfqaVerdictHdr, v))
	for {
		err := unix.Sendto(q.fd, m, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			q.errs.Add(1)
			return
		}
		q.released.Add(1)
		return
	}
}

// close releases every held packet, then every packet the kernel queued
// before the queue's rules were removed (the caller removes them first), and
// closes the socket. Closing a bound socket drops what the kernel still
// holds, so the held packets are let go first.
func (q *delayQueue) close() error {
	q.mu.Lock()
	q.stopping = true
	q.mu.Unlock()
	close(q.stop)
	q.done.Wait()
	buf := make([]byte, 1<<16)
	for {
		n, _, err := unix.Recvfrom(q.fd, buf, unix.MSG_DONTWAIT)
		if err != nil {
			break
		}
		q.take(buf[:n], time.Now())
	}
	err := unix.Close(q.fd)
	if f, ok := q.failed.Load().(error); ok {
		return fmt.Errorf("nethost: the delay queue's receiver failed: %w", f)
	}
	return err
}

// attr encodes one netlink attribute, padded to 4 bytes.
func attr(typ uint16, data []byte) []byte {
	b := make([]byte, 4, 4+len(data)+3)
	binary.NativeEndian.PutUint16(b, uint16(4+len(data)))
	binary.NativeEndian.PutUint16(b[2:], typ)
	b = append(b, data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// message encodes an nfnetlink_queue message for queue queueNum.
func message(msg uint16, flags uint16, seq uint32, attrs []byte) []byte {
	b := make([]byte, unix.NLMSG_HDRLEN+4, unix.NLMSG_HDRLEN+4+len(attrs))
	binary.NativeEndian.PutUint32(b, uint32(unix.NLMSG_HDRLEN+4+len(attrs)))
	binary.NativeEndian.PutUint16(b[4:], nfnlSubsysQueue<<8|msg)
	binary.NativeEndian.PutUint16(b[6:], flags)
	binary.NativeEndian.PutUint32(b[8:], seq)
	// nfgenmsg: family AF_UNSPEC, version 0, the queue number big-endian.
	binary.BigEndian.PutUint16(b[unix.NLMSG_HDRLEN+2:], queueNum)
	return append(b, attrs...)
}

type nlMessage struct {
	typ  uint16
	seq  uint32
	body []byte // after the netlink header
}

// parseMessages splits a datagram into its netlink messages, checking every
// length against the bytes present.
func parseMessages(b []byte) ([]nlMessage, error) {
	var out []nlMessage
	for len(b) > 0 {
		if len(b) < unix.NLMSG_HDRLEN {
			return out, fmt.Errorf("netlink: %d bytes left, short of a header", len(b))
		}
		n := int(binary.NativeEndian.Uint32(b))
		if n < unix.NLMSG_HDRLEN || n > len(b) {
			return out, fmt.Errorf("netlink: message length %d with %d bytes left", n, len(b))
		}
		out = append(out, nlMessage{
			typ:  binary.NativeEndian.Uint16(b[4:]),
			seq:  binary.NativeEndian.Uint32(b[8:]),
			body: b[unix.NLMSG_HDRLEN:n],
		})
		n = (n + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1)
		if n >= len(b) {
			break
		}
		b = b[n:]
	}
	return out, nil
}

// packetID finds the packet id in the body of an NFQNL_MSG_PACKET (an
// nfgenmsg, then attributes).
func packetID(body []byte) (uint32, bool) {
	if len(body) < 4 {
		return 0, false
	}
	b := body[4:]
	for len(b) >= 4 {
		n := int(binary.NativeEndian.Uint16(b))
		typ := binary.NativeEndian.Uint16(b[2:]) & nlaTypeMask
		if n < 4 || n > len(b) {
			return 0, false
		}
		// struct nfqnl_msg_packet_hdr: __be32 packet_id, __be16
		// hw_protocol, __u8 hook.
		if typ == nfqaPacketHdr && n >= 4+4 {
			return binary.BigEndian.Uint32(b[4:]), true
		}
		n = (n + 3) &^ 3
		if n >= len(b) {
			break
		}
		b = b[n:]
	}
	return 0, false
}
