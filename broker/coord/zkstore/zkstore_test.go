package zkstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/broker/coord/coordtest"
	"github.com/ktoolhq/ktool/internal/zktest"
)

// sessionTimeout is short so that expiry by a timeout would also be quick;
// the harness expires sessions by closing them from a second connection.
const sessionTimeout = 2 * time.Second

// passwords learns each session's password from the connect responses
// flowing through its dialer, so a test can take over a session the way a
// second ZooKeeper client holding the id and password can.
type passwords struct {
	mu sync.Mutex
	m  map[int64][]byte
}

func (p *passwords) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	return &sniffConn{Conn: c, p: p}, nil
}

func (p *passwords) get(id int64) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[id]
}

// sniffConn reads the connect response, the first frame the server sends:
// protocol version, timeout, session id and password.
type sniffConn struct {
	net.Conn
	p    *passwords
	buf  []byte
	done bool
}

func (c *sniffConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if !c.done {
		c.buf = append(c.buf, b[:n]...)
		if len(c.buf) >= 4 {
			size := int(binary.BigEndian.Uint32(c.buf))
			if len(c.buf) >= 4+size && size >= 20 {
				body := c.buf[4 : 4+size]
				id := int64(binary.BigEndian.Uint64(body[8:16]))
				plen := int(binary.BigEndian.Uint32(body[16:20]))
				if id != 0 && plen >= 0 && 20+plen <= len(body) {
					c.p.mu.Lock()
					c.p.m[id] = append([]byte(nil), body[20:20+plen]...)
					c.p.mu.Unlock()
				}
				c.done, c.buf = true, nil
			}
		}
	}
	return n, err
}

// opCloseSession is ZooKeeper's closeSession opcode, -11, as sent on the
// wire.
const opCloseSession = 0xfffffff5

// closeSession connects with the session's id and password and sends
// closeSession, which ends the session for its owner too: the owner learns
// on its next connection that the session expired.
func closeSession(addr string, id int64, passwd []byte) error {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	req := binary.BigEndian.AppendUint32(nil, 0) // protocol version
	req = binary.BigEndian.AppendUint64(req, 0)  // last zxid seen
	req = binary.BigEndian.AppendUint32(req, uint32(sessionTimeout.Milliseconds()))
	req = binary.BigEndian.AppendUint64(req, uint64(id))
	req = binary.BigEndian.AppendUint32(req, uint32(len(passwd)))
	req = append(req, passwd...)
	req = append(req, 0) // not read-only
	if _, err := c.Write(binary.BigEndian.AppendUint32(nil, uint32(len(req)))); err != nil {
		return err
	}
	if _, err := c.Write(req); err != nil {
		return err
	}
	resp, err := readFrame(c)
	if err != nil {
		return err
	}
	if len(resp) < 16 || int64(binary.BigEndian.Uint64(resp[8:16])) != id {
		return errors.New("session already gone")
	}
	closeReq := binary.BigEndian.AppendUint32(nil, 8)
	closeReq = binary.BigEndian.AppendUint32(closeReq, 1) // xid
	closeReq = binary.BigEndian.AppendUint32(closeReq, opCloseSession)
	if _, err := c.Write(closeReq); err != nil {
		return err
	}
	reply, err := readFrame(c)
	if err != nil {
		return err
	}
	if len(reply) < 16 || binary.BigEndian.Uint32(reply[12:16]) != 0 {
		return fmt.Errorf("closeSession reply %x", reply)
	}
	return nil
}

func readFrame(r io.Reader) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(h[:]))
	_, err := io.ReadFull(r, b)
	return b, err
}

func newConnector(t *testing.T, connect string, p *passwords) *Connector {
	t.Helper()
	c, err := NewConnector(connect, sessionTimeout, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.dial = p.dial
	return c
}

// expire closes the session from a second connection until the store sees
// its expiry; a close can lose the race with the owner's reconnect, so it
// is repeated.
func expire(t *testing.T, addr string, p *passwords, s coord.Store) {
	t.Helper()
	passwd := p.get(s.SessionID())
	if passwd == nil {
		t.Fatalf("no password seen for session 0x%x", s.SessionID())
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := closeSession(addr, s.SessionID(), passwd)
		select {
		case <-s.Expired():
			return
		case <-time.After(2 * time.Second):
		}
		if time.Now().After(deadline) {
			t.Fatalf("session 0x%x did not expire (last close: %v)", s.SessionID(), err)
		}
	}
}

func TestConformance(t *testing.T) {
	srv := zktest.Start(t)
	var n atomic.Int64
	coordtest.Run(t, func(t *testing.T) coordtest.Harness {
		p := &passwords{m: map[int64][]byte{}}
		chroot := fmt.Sprintf("/conformance/%d", n.Add(1))
		return coordtest.Harness{
			Connector: newConnector(t, srv.Addr()+chroot, p),
			Expire: func(t *testing.T, s coord.Store) {
				expire(t, srv.Addr(), p, s)
			},
		}
	})
}

func TestChroot(t *testing.T) {
	srv := zktest.Start(t)
	p := &passwords{m: map[int64][]byte{}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rooted, err := newConnector(t, srv.Addr()+"/kafka/prod", p).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rooted.Close()
	plain, err := newConnector(t, srv.Addr(), p).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()

	kids, _, ch, err := rooted.ChildrenW(ctx, "/")
	if err != nil || len(kids) != 0 {
		t.Fatalf("fresh chroot children %v %v", kids, err)
	}
	if _, err := rooted.Create(ctx, "/brokers", []byte("x"), coord.Persistent); err != nil {
		t.Fatal(err)
	}
	ev := <-ch
	if ev.Type != coord.NodeChildrenChanged || ev.Path != "/" {
		t.Fatalf("event %+v", ev)
	}
	name, err := rooted.Create(ctx, "/brokers/seq-", nil, coord.PersistentSequential)
	if err != nil || name != "/brokers/seq-0000000000" {
		t.Fatalf("sequential name in chroot %q %v", name, err)
	}
	data, _, err := plain.Get(ctx, "/kafka/prod/brokers")
	if err != nil || string(data) != "x" {
		t.Fatalf("outside view %q %v", data, err)
	}
	if ok, _, _ := plain.Exists(ctx, "/brokers"); ok {
		t.Fatal("chrooted node written at the real root")
	}
	if err := rooted.Multi(ctx, coord.CreateOp("/m", nil, coord.Persistent), coord.SetOp("/brokers", []byte("y"), 0)); err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := plain.Exists(ctx, "/kafka/prod/m"); !ok {
		t.Fatal("multi ignored the chroot")
	}
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c, err := NewConnector(addr, sessionTimeout, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	_, err = c.Connect(ctx)
	if err == nil || !strings.Contains(err.Error(), addr) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("connect to nothing: %v", err)
	}
}

func TestParseConnect(t *testing.T) {
	for _, tc := range []struct {
		in      string
		servers string
		chroot  string
		bad     bool
	}{
		{in: "localhost:2181", servers: "[localhost:2181]"},
		{in: "h1:1,h2:2/kafka", servers: "[h1:1 h2:2]", chroot: "/kafka"},
		{in: "h1, h2:2182/a/b", servers: "[h1:2181 h2:2182]", chroot: "/a/b"},
		{in: "h1/", servers: "[h1:2181]"},
		{in: "[::1]:2181", servers: "[[::1]:2181]"},
		{in: "", bad: true},
		{in: "h1,,h2", bad: true},
		{in: "h1:x", bad: true},
		{in: "h1:99999", bad: true},
		{in: "h1/a/", bad: true},
		{in: ":2181", bad: true},
	} {
		servers, chroot, err := ParseConnect(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseConnect(%q) accepted: %v %q", tc.in, servers, chroot)
			}
			continue
		}
		if err != nil || fmt.Sprint(servers) != tc.servers || chroot != tc.chroot {
			t.Errorf("ParseConnect(%q) = %v %q %v", tc.in, servers, chroot, err)
		}
	}
	if _, err := NewConnector("h:1", 0, nil); err == nil {
		t.Error("accepted a zero session timeout")
	}
}

// A ZooKeeper restart within the session timeout keeps the session: calls
// fail with ErrConnectionLoss meanwhile, then work again, and ephemerals
// survive.
func TestServerRestartKeepsSession(t *testing.T) {
	srv := zktest.Start(t)
	c, err := NewConnector(srv.Addr(), 20*zktest.TickTime, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := c.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Create(ctx, "/eph", []byte("x"), coord.Ephemeral); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	if _, _, err := s.Get(ctx, "/eph"); !errors.Is(err, coord.ErrConnectionLoss) {
		t.Fatalf("get while ZooKeeper is down: %v", err)
	}
	srv.Restart()
	// The server restores its sessions with a fresh timeout when it starts,
	// so only the time since then counts: a loaded machine may take most of
	// the first context to start the JVM (CI once failed here on that).
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ok, st, err := s.Exists(ctx, "/eph")
		if err == nil {
			if !ok || st.EphemeralOwner != s.SessionID() {
				t.Fatalf("ephemeral after restart: %v %+v", ok, st)
			}
			break
		}
		if !errors.Is(err, coord.ErrConnectionLoss) || time.Now().After(deadline) {
			t.Fatalf("after restart: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case <-s.Expired():
		t.Fatal("session expired across a quick restart")
	default:
	}
}

// multiAt builds check ops on existing znodes whose multi request is exactly
// size bytes under chroot: checks of a child of /big, and one of a znode whose
// name length makes up the rest (created here).
func multiAt(t *testing.T, ctx context.Context, s coord.Store, chroot string, size int) []coord.Op {
	t.Helper()
	// Checks of a znode with a long name: about a thousand ops, which a loaded
	// server still answers quickly.
	long := "/big/" + strings.Repeat("n", 900)
	if _, err := s.Create(ctx, long, nil, coord.Persistent); err != nil && !errors.Is(err, coord.ErrNodeExists) {
		t.Fatal(err)
	}
	var ops []coord.Op
	for coord.MultiBytes(ops, len(chroot))+coord.OpBytes(coord.CheckOp(long, -1), len(chroot))+1200 < size {
		ops = append(ops, coord.CheckOp(long, -1))
	}
	pad := "/p" + strings.Repeat("x", 200)
	last := coord.CheckOp(pad, -1)
	for coord.MultiBytes(append(ops, last), len(chroot)) < size {
		pad += "x"
		last = coord.CheckOp(pad, -1)
	}
	if _, err := s.Create(ctx, pad, nil, coord.Persistent); err != nil && !errors.Is(err, coord.ErrNodeExists) {
		t.Fatal(err)
	}
	ops = append(ops, last)
	if got := coord.MultiBytes(ops, len(chroot)); got != size {
		t.Fatalf("built a multi of %d bytes, want %d", got, size)
	}
	return ops
}

// TestMultiAtJuteMaxBuffer checks the size accounting against a real
// server: a multi of exactly jute.maxbuffer bytes is applied; one byte more
// is refused by the store before it is sent (sent anyway, the server drops
// the connection); and SplitMulti cuts a set of writes far above the limit
// into multis that all go through.
func TestMultiAtJuteMaxBuffer(t *testing.T) {
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const chroot = "/jute"
	// A session timeout long enough for megabyte requests on a loaded machine.
	conn, err := NewConnector(srv.Addr()+chroot, 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := conn.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Create(ctx, "/big", nil, coord.Persistent); err != nil {
		t.Fatal(err)
	}

	at := multiAt(t, ctx, s, chroot, coord.MaxRequestBytes)
	if err := s.Multi(ctx, at...); err != nil {
		t.Fatalf("multi of exactly %d bytes: %v", coord.MaxRequestBytes, err)
	}
	over := multiAt(t, ctx, s, chroot, coord.MaxRequestBytes+1)
	if err := s.Multi(ctx, over...); !errors.Is(err, coord.ErrRequestTooLarge) {
		t.Fatalf("multi of %d bytes: %v, want ErrRequestTooLarge", coord.MaxRequestBytes+1, err)
	}
	// The store's limit is the server's: sent raw, the same request is not applied.
	raw, _, err := zk.Connect([]string{srv.Addr()}, 30*time.Second, zk.WithLogger(slogAdapter{slog.New(slog.DiscardHandler)}))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	reqs := make([]any, len(over))
	for i, op := range over {
		reqs[i] = &zk.CheckVersionRequest{Path: chroot + op.Path, Version: -1}
	}
	if _, err := raw.Multi(reqs...); err == nil {
		t.Fatalf("the server applied a multi of %d bytes", coord.MaxRequestBytes+1)
	}

	// 3,000 znodes of 600 bytes each (about 2 MiB of writes) in parts.
	fence := []coord.Op{coord.CheckOp("/big", 0)}
	var ops []coord.Op
	var groups []int
	data := []byte(strings.Repeat("d", 600))
	if _, err := s.Create(ctx, "/many", nil, coord.Persistent); err != nil {
		t.Fatal(err)
	}
	for i := range 3000 {
		ops = append(ops, coord.CreateOp(fmt.Sprintf("/many/%d", i), nil, coord.Persistent),
			coord.CreateOp(fmt.Sprintf("/many/%d/state", i), data, coord.Persistent))
		groups = append(groups, 2)
	}
	spans := coord.SplitMulti(fence, ops, groups, coord.MultiBatchBytes, len(chroot))
	if len(spans) < 4 {
		t.Fatalf("%d parts for %d bytes of writes", len(spans), coord.MultiBytes(ops, len(chroot)))
	}
	for _, sp := range spans {
		if err := s.Multi(ctx, append(slices.Clone(fence), ops[sp.Start:sp.End]...)...); err != nil {
			t.Fatalf("part %v: %v", sp, err)
		}
	}
	kids, _, err := s.Children(ctx, "/many")
	if err != nil || len(kids) != 3000 {
		t.Fatalf("%d znodes written, err %v", len(kids), err)
	}
}
