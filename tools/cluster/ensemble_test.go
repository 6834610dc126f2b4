package cluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/internal/zkinstall"
)

// freeZooKeeperPort finds a client port p such that p..p+2, p+100..p+102 and
// p+200..p+202 are free.
func freeZooKeeperPort(t *testing.T) int {
	t.Helper()
	for range 100 {
		p := 20000 + rand.IntN(30000)
		ok := true
		for _, off := range []int{0, 1, 2, 100, 101, 102, 200, 201, 202} {
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+off))
			if err != nil {
				ok = false
				break
			}
			ln.Close()
		}
		if ok {
			return p
		}
	}
	t.Fatal("no free ZooKeeper ports")
	return 0
}

// TestLocalClusterEnsemble starts a cluster on a local ensemble of three
// ZooKeeper nodes, kills the node that leads the ensemble, and checks that
// the brokers keep their sessions (still registered, topics created), and
// that down stops every node.
func TestLocalClusterEnsemble(t *testing.T) {
	if _, err := zkinstall.Find(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI needs a ZooKeeper installation: %v", err)
		}
		t.Skipf("SKIPPING the local ZooKeeper ensemble test: %v", err)
	}
	e := newEnv(t)
	base, _ := freeBase(t, 2)
	zkPort := freeZooKeeperPort(t)
	out := e.mustRun("cluster", "up", "--dir", e.dir, "-n", "2", "--base-port", strconv.Itoa(base),
		"--zookeeper-port", strconv.Itoa(zkPort), "--zookeeper-nodes", "3")
	if !strings.Contains(out, "an ensemble of 3") {
		t.Fatalf("up printed:\n%s", out)
	}
	st, err := LoadState(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", zkPort, zkPort+1, zkPort+2)
	if len(st.ZooKeeperEnsemble) != 3 || st.ZooKeeperProcess != nil || st.ZooKeeper != want {
		t.Fatalf("state: ensemble %v, single %v, connect %s (want %s)", st.ZooKeeperEnsemble, st.ZooKeeperProcess, st.ZooKeeper, want)
	}
	s := e.status()
	if len(s.ZooKeeperNodes) != 3 || !s.ZooKeeperNodes[2].Running {
		t.Fatalf("status: %+v", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	leader := -1
	for i, addr := range strings.Split(st.ZooKeeper, ",") {
		if strings.Contains(fourLetters(ctx, addr, "srvr"), "Mode: leader") {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatal("no ZooKeeper node leads")
	}
	if err := syscall.Kill(st.ZooKeeperEnsemble[leader].PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(st.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	eventually(t, time.Minute, "a topic created with ZooKeeper node "+strconv.Itoa(leader+1)+" killed", func() error {
		resp, err := adm.CreateTopic(ctx, 1, 2, nil, "after-zk-leader")
		if err == nil {
			err = resp.Err
		}
		if err != nil && !strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS") {
			return err
		}
		m, err := adm.Metadata(ctx, "after-zk-leader")
		if err != nil {
			return err
		}
		if p := m.Topics["after-zk-leader"].Partitions[0]; p.Leader < 0 || len(p.ISR) != 2 {
			return fmt.Errorf("partition %+v", p)
		}
		return nil
	})
	s = e.status()
	for _, b := range s.Brokers {
		if !b.Registered {
			t.Fatalf("broker %d lost its registration with the ZooKeeper leader killed: %+v", b.ID, s)
		}
	}
	out = e.mustRun("cluster", "down", "--dir", e.dir)
	if strings.Count(out, "Stopped ZooKeeper node") != 2 {
		t.Fatalf("down printed:\n%s", out)
	}
	if st, err := LoadState(e.dir); err != nil || st.Running() {
		t.Fatalf("after down: %+v %v", st, err)
	}
}
