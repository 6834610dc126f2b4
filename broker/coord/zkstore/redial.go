package zkstore

import (
	"net"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// After losing its server, go-zookeeper tries the servers in turn, each dial
// bounded by a fixed 1 s, and sleeps 1 s whenever it has tried them all. It
// notices the loss only after 2/3 of the session timeout without a packet,
// so with a 4 s session it has 1.3 s left to reach a live server before the
// ensemble expires the session: one silent (dropped, not refused) server
// tried first and one round's sleep take it all. redial is the reconnection
// policy of one session, its host provider and dialer in one:
//
//   - a dial is bounded by a share of the session timeout, so that a round
//     of silent servers fits in the third of the session left after the
//     loss is noticed (never above go-zookeeper's bound, never below
//     minDial);
//   - while the session may still live (less than a session timeout since
//     the connection was lost), a round of failed servers does not end in
//     go-zookeeper's 1 s sleep: the next round starts at once, but rounds
//     start at least roundPace apart, so that servers refusing at once are
//     not dialled in a busy loop;
//   - past that, or once the session is closed, go-zookeeper's own sleep
//     between rounds applies again (it also fails the requests queued
//     meanwhile with ErrNoServer, and notices Close);
//   - the handshake (connect request and response) on a new connection is
//     bounded too (handshakeBound): go-zookeeper waits 10 times 2/3 of the
//     session for it, so a server whose kernel accepts connections while
//     the server itself is stuck (paused, swapping, in a long GC) would
//     hold the client until the session is gone.
//
// The bounds use the session timeout asked for: a server grants 2..20 of its
// ticks, so with a timeout outside that range the granted one differs.
type redial struct {
	hosts *zk.DNSHostProvider
	dial  zk.Dialer
	now   func() time.Time
	sleep func(time.Duration)

	mu      sync.Mutex
	session time.Duration
	servers int
	// up: connected since the last Next; lost: when that connection was
	// given up (the first Next after it).
	up   bool
	lost time.Time
	// roundStart is when the current round of servers began; wait is a
	// pause owed by the next dial (the pace between rounds).
	roundStart time.Time
	wait       time.Duration
	stopped    bool
	// shaking is the connection whose handshake is under way.
	shaking *handshakeConn
}

const (
	// minDial is the least time a dial may take: a SYN's round trip on a
	// slow link, with room.
	minDial = 250 * time.Millisecond
	// maxRoundPace bounds the pace between rounds: go-zookeeper's own sleep.
	maxRoundPace = time.Second
	// minRoundPace keeps servers that refuse at once from being dialled in
	// a busy loop.
	minRoundPace = 100 * time.Millisecond
)

var _ zk.HostProvider = (*redial)(nil)

func newRedial(session time.Duration, dial zk.Dialer) *redial {
	return &redial{hosts: zk.NewDNSHostProvider(), dial: dial, now: time.Now, sleep: time.Sleep, session: session}
}

// dialBound is the longest a dial may take with servers servers and a
// session timeout of session, given go-zookeeper's bound zkBound: a quarter
// of the session divided among the servers.
func dialBound(session time.Duration, servers int, zkBound time.Duration) time.Duration {
	if servers < 1 {
		servers = 1
	}
	d := session / time.Duration(4*servers)
	d = max(d, minDial)
	return min(d, zkBound)
}

// handshakeBound is the longest the handshake on a new connection may take:
// a sixth of the session, at least a dial's bound (the server may have to
// ask its leader whether the session lives).
func handshakeBound(session, dial time.Duration) time.Duration {
	return max(session/6, dial)
}

// roundPace is the least time between the starts of two rounds of servers
// while the session may live: an eighth of the session, within
// [minRoundPace, maxRoundPace].
func roundPace(session time.Duration) time.Duration {
	return min(max(session/8, minRoundPace), maxRoundPace)
}

// Init resolves and shuffles the servers, as go-zookeeper's default does.
func (r *redial) Init(servers []string) error {
	if err := r.hosts.Init(servers); err != nil {
		return err
	}
	r.mu.Lock()
	r.servers = r.hosts.Len()
	r.mu.Unlock()
	return nil
}

// Len is the number of resolved servers.
func (r *redial) Len() int { return r.hosts.Len() }

// Connected marks a session established on the current server.
func (r *redial) Connected() {
	r.hosts.Connected()
	r.mu.Lock()
	r.up = true
	h := r.shaking
	r.shaking = nil
	r.mu.Unlock()
	if h != nil {
		h.finish()
	}
}

// Next picks the next server; retryStart (go-zookeeper then sleeps 1 s and
// fails queued requests) only when the session cannot be saved by hurrying.
func (r *redial) Next() (string, bool) {
	server, retryStart := r.hosts.Next()
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if r.up {
		r.up = false
		r.lost = now
		r.roundStart = now
	}
	if !retryStart {
		return server, false
	}
	if r.stopped || r.lost.IsZero() || now.Sub(r.lost) >= r.session {
		r.roundStart = now.Add(maxRoundPace)
		return server, true
	}
	next := r.roundStart.Add(roundPace(r.session))
	if next.After(now) {
		r.wait = next.Sub(now)
	} else {
		next = now
	}
	r.roundStart = next
	return server, false
}

// Dial pays the pace owed between rounds, then dials within dialBound; the
// connection's handshake must end within handshakeBound.
func (r *redial) Dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	r.mu.Lock()
	wait := r.wait
	r.wait = 0
	bound := dialBound(r.session, r.servers, timeout)
	shake := handshakeBound(r.session, bound)
	r.mu.Unlock()
	if wait > 0 {
		r.sleep(wait)
	}
	conn, err := r.dial(network, addr, bound)
	if err != nil {
		return nil, err
	}
	h := &handshakeConn{Conn: conn, deadline: time.Now().Add(shake)}
	if err := conn.SetDeadline(h.deadline); err != nil {
		conn.Close()
		return nil, err
	}
	r.mu.Lock()
	r.shaking = h
	r.mu.Unlock()
	return h, nil
}

// handshakeConn holds every deadline go-zookeeper sets to at most deadline
// until the handshake is over (finish); go-zookeeper sets its own deadline
// before every read and write after that.
type handshakeConn struct {
	net.Conn
	mu       sync.Mutex
	deadline time.Time
	done     bool
}

func (c *handshakeConn) clamp(t time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done || (!t.IsZero() && t.Before(c.deadline)) {
		return t
	}
	return c.deadline
}

func (c *handshakeConn) SetDeadline(t time.Time) error { return c.Conn.SetDeadline(c.clamp(t)) }

func (c *handshakeConn) SetReadDeadline(t time.Time) error {
	return c.Conn.SetReadDeadline(c.clamp(t))
}

func (c *handshakeConn) SetWriteDeadline(t time.Time) error {
	return c.Conn.SetWriteDeadline(c.clamp(t))
}

func (c *handshakeConn) finish() {
	c.mu.Lock()
	c.done = true
	c.mu.Unlock()
	_ = c.Conn.SetDeadline(time.Time{})
}

// stop gives the loop back to go-zookeeper, which notices a Close only
// between rounds.
func (r *redial) stop() {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
}
