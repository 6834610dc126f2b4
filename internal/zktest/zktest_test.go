package zktest

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

func session(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return conn
			}
		case <-deadline:
			t.Fatal("no session")
		}
	}
}

func TestStartKillRestart(t *testing.T) {
	s := Start(t)
	if !ruok(s.Addr(), net.DialTimeout) {
		t.Fatal("not serving after Start")
	}
	c := session(t, s.Addr())
	if _, err := c.Create("/persisted", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	addr := s.Addr()
	s.Kill()
	if ruok(addr, net.DialTimeout) {
		t.Fatal("still serving after Kill")
	}
	s.Restart()
	if s.Addr() != addr {
		t.Fatalf("address changed across restart: %s then %s", addr, s.Addr())
	}
	data, _, err := session(t, s.Addr()).Get("/persisted")
	if err != nil || string(data) != "x" {
		t.Fatalf("after restart: %q %v", data, err)
	}
	s.Stop()
	if ruok(addr, net.DialTimeout) {
		t.Fatal("still serving after Stop")
	}
}

func TestFind(t *testing.T) {
	cmd, ok := Find()
	if !ok {
		t.Skip("no ZooKeeper installation")
	}
	if len(cmd) != 3 || cmd[1] != "-cp" {
		t.Fatalf("java command %v", cmd)
	}
}

func TestEnsembleLeaderKilled(t *testing.T) {
	e := StartEnsemble(t, []Node{{}, {}, {}}, nil)
	leader, err := e.Leader()
	if err != nil {
		t.Fatal(err)
	}
	for id := 1; id <= e.Len(); id++ {
		if m, err := e.Mode(id); err != nil || (id != leader && m != "follower") {
			t.Fatalf("node %d: mode %q %v (leader %d)", id, m, err, leader)
		}
	}
	conn, events, err := zk.Connect(strings.Split(e.Connect(), ","), 4*time.Second, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	waitSession(t, events)
	if _, err := conn.Create("/kept", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	e.Node(leader).Kill()
	deadline := time.Now().Add(30 * time.Second)
	for {
		next, err := e.Leader()
		if err == nil && next != leader {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new leader 30 s after killing node %d: %v", leader, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The session survives on the other nodes, and the data with it.
	data, _, err := conn.Get("/kept")
	if err != nil || string(data) != "x" {
		t.Fatalf("after the leader died: %q %v", data, err)
	}
	if m, err := e.Mntr(1 + leader%3); err != nil || m["zk_server_state"] == "" {
		t.Fatalf("mntr: %v %v", m, err)
	}
	// The killed node comes back as a follower.
	if err := e.Launch(leader); err != nil {
		t.Fatal(err)
	}
	if err := e.Wait(leader); err != nil {
		t.Fatalf("restarting node %d: %v\n%s", leader, err, e.Node(leader).output())
	}
	if m, err := e.Mode(leader); err != nil || m != "follower" {
		t.Fatalf("restarted node %d: mode %q %v", leader, m, err)
	}
}

func waitSession(t *testing.T, events <-chan zk.Event) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return
			}
		case <-deadline:
			t.Fatal("no session")
		}
	}
}
