package zktest

import (
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
	if !ruok(s.Addr()) {
		t.Fatal("not serving after Start")
	}
	c := session(t, s.Addr())
	if _, err := c.Create("/persisted", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	addr := s.Addr()
	s.Kill()
	if ruok(addr) {
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
	if ruok(addr) {
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
