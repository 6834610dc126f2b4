package netns

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ktoolhq/ktool/internal/nethost"
)

// sessions is who holds the brokers' ephemerals: any change means a session
// expired.
type sessions struct {
	controller      int32
	controllerOwner int64
	owners          map[int32]int64 // the ephemeralOwner of /brokers/ids/N
}

func (s sessions) String() string {
	return fmt.Sprintf("controller %d (session %#x), registrations %v", s.controller, s.controllerOwner, s.ownersHex())
}

func (s sessions) ownersHex() map[int32]string {
	out := map[int32]string{}
	for id, o := range s.owners {
		out[id] = fmt.Sprintf("%#x", o)
	}
	return out
}

func (s sessions) equal(o sessions) bool {
	if s.controller != o.controller || s.controllerOwner != o.controllerOwner || len(s.owners) != len(o.owners) {
		return false
	}
	for id, v := range s.owners {
		if o.owners[id] != v {
			return false
		}
	}
	return true
}

// readSessions reads the owners of /controller and /brokers/ids/N.
func (c *netCluster) readSessions(ctx context.Context) (sessions, error) {
	var st sessions
	err := poll(ctx, 30*time.Second, func(ctx context.Context) error {
		conn := c.zkSession()
		type result struct {
			st  sessions
			err error
		}
		ch := make(chan result, 1)
		go func() {
			st := sessions{owners: map[int32]int64{}}
			var err error
			st.controller, st.controllerOwner, err = readController(conn)
			if err != nil {
				ch <- result{err: err}
				return
			}
			regs, err := c.readRegistrations(conn)
			if err != nil {
				ch <- result{err: err}
				return
			}
			for id, stat := range regs {
				st.owners[id] = stat.EphemeralOwner
			}
			ch <- result{st: st}
		}()
		select {
		case r := <-ch:
			st = r.st
			return r.err
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	return st, err
}

// zkClients is the client addresses node (1..3) lists in its stat answer,
// or an error when the node does not serve.
func (c *netCluster) zkClients(node int) ([]string, error) {
	conn, err := c.client.Dial("tcp", c.zk.Node(node).Addr(), time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(conn, "stat"); err != nil {
		return nil, err
	}
	var out []string
	sc := bufio.NewScanner(conn)
	serving := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "Mode: ") {
			serving = true
		}
		// " /10.1.0.5:40122[1](queued=0,recved=..)"
		if a, ok := strings.CutPrefix(line, "/"); ok {
			if i := strings.IndexByte(a, '['); i > 0 {
				out = append(out, a[:i])
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !serving {
		return nil, fmt.Errorf("zookeeper node %d does not serve", node)
	}
	return out, nil
}

// zkConnOf is the ZooKeeper node broker id is connected to and that
// connection's address, polled until a serving node but those of not lists
// a connection of the broker that is not in stale (a node keeps listing a
// connection the broker gave up on while the cut hides that from it).
func (c *netCluster) zkConnOf(ctx context.Context, id int32, stale map[string]bool, not ...int) (int, string, error) {
	var node int
	var addr string
	ip := c.host[id].IP()
	err := poll(ctx, 30*time.Second, func(context.Context) error {
		for n := 1; n <= c.zk.Len(); n++ {
			if slices.Contains(not, n) {
				continue
			}
			clients, err := c.zkClients(n)
			if err != nil {
				continue
			}
			for _, a := range clients {
				if strings.HasPrefix(a, ip+":") && !stale[a] {
					node, addr = n, a
					return nil
				}
			}
		}
		return fmt.Errorf("no serving ZooKeeper node but %v lists a new connection of broker %d (%s)", not, id, ip)
	})
	return node, addr, err
}

// TestZkSessionSurvives silences ZooKeeper nodes in ways the broker's
// session (zookeeper.session.timeout.ms=4000) can survive, and checks that it
// does: the owners of /brokers/ids/1 and /controller never change.
//
//  1. The broker is cut (packets dropped) from its own node: it moves to the
//     node its client tries next, which tells the test that order.
//  2. It is cut from its new node and from the one its client tries next,
//     so that its first dial goes to a silent node; the third node must
//     still be reached within the session timeout.
//  3. It is cut from its node while the node its client tries next is
//     frozen (SIGSTOP): that node's kernel accepts the connection, the
//     server never answers the handshake.
//  4. Two nodes, the broker's among them, are cut from everything for 4 s:
//     the quorum is lost, no session can expire, and once it is back the
//     broker must reach a node within the timeout the new leader grants
//     every session.
//
// KTOOL_NETNS_ZKSESSION_FULL=1 also loses the quorum with the broker's node
// kept, and for 8 s both ways.
func TestZkSessionSurvives(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-host fault test: runs without -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := newNetClusterWith(t, 1, brokerOverrides(), "--log-level", "debug")
	const id = 1
	b := []*nethost.Host{c.host[id]}
	before, err := c.readSessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("session timeout %v; %v", sessionTimeout, before)
	same := func(what string) {
		t.Helper()
		after, err := c.readSessions(ctx)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !before.equal(after) {
			t.Fatalf("%s: the broker's session expired:\nbefore %v\nafter  %v", what, before, after)
		}
	}
	seen := map[string]bool{}
	on := func(what string, not ...int) int {
		t.Helper()
		n, addr, err := c.zkConnOf(ctx, id, seen, not...)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		seen[addr] = true
		return n
	}
	heal := func() {
		t.Helper()
		if err := c.lab.Heal(); err != nil {
			t.Fatal(err)
		}
	}
	// moved cuts the broker from nodes (and freezes frozen) until it is on
	// another node, then heals.
	moved := func(what string, frozen int, nodes ...int) int {
		t.Helper()
		var hosts []*nethost.Host
		for _, n := range nodes {
			hosts = append(hosts, c.zkHost[n-1])
		}
		not := nodes
		if frozen != 0 {
			not = append(slices.Clone(nodes), frozen)
			if err := c.zk.Node(frozen).Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		err := c.lab.Partition(b, hosts)
		n := 0
		if err == nil {
			n = on(what, not...)
		}
		took := time.Since(start)
		if frozen != 0 {
			if err := c.zk.Node(frozen).Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
		}
		heal()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: on node %d %v after the cut", what, n, took.Round(10*time.Millisecond))
		same(what)
		return n
	}

	own := on("the broker's node")
	next := moved(fmt.Sprintf("broker cut from its node %d", own), 0, own)
	third := 6 - own - next
	moved(fmt.Sprintf("broker cut from its node %d and node %d, the next it tries", next, third), 0, next, third)
	cur := moved(fmt.Sprintf("broker cut from its node %d, node %d (the next it tries) frozen", own, next), next, own)

	lens := []time.Duration{quorumLossLen / 2}
	keepOwn := []bool{false}
	if os.Getenv("KTOOL_NETNS_ZKSESSION_FULL") != "" {
		lens = []time.Duration{quorumLossLen / 2, quorumLossLen, quorumLossLen / 2, quorumLossLen}
		keepOwn = []bool{false, false, true, true}
	}
	for i, d := range lens {
		cut := []int{cur, cur%3 + 1}
		if keepOwn[i] {
			cut = []int{cur%3 + 1, (cur+1)%3 + 1}
		}
		what := fmt.Sprintf("quorum lost for %v: nodes %v cut, the broker on node %d", d, cut, cur)
		for _, n := range cut {
			if err := c.lab.Isolate(c.zkHost[n-1]); err != nil {
				c.lab.Heal()
				t.Fatal(err)
			}
		}
		sleep(ctx, d)
		heal()
		healed := time.Now()
		if err := poll(ctx, time.Minute, func(context.Context) error {
			_, err := c.zk.Leader()
			return err
		}); err != nil {
			t.Fatalf("%s: no ZooKeeper leader after the heal: %v", what, err)
		}
		led := time.Since(healed)
		cur = on(what)
		t.Logf("%s: a ZooKeeper node led %v after the heal, the broker was on node %d after %v",
			what, led.Round(10*time.Millisecond), cur, time.Since(healed).Round(10*time.Millisecond))
		same(what)
	}
}
