package zktest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ktoolhq/ktool/internal/zkinstall"
)

// Dialer opens a connection to a server, like net.DialTimeout; a test whose
// servers live in network namespaces dials from one.
type Dialer func(network, addr string, timeout time.Duration) (net.Conn, error)

// Node says where one node of an ensemble runs: on Host (its client, quorum
// and election ports 2181, 2888 and 3888 bound there), under the command
// prefix Exec (such as ip netns exec NAME). A node with no Host runs on
// 127.0.0.1 on free ports.
type Node struct {
	Host string
	Exec []string
}

// Ensemble is a ZooKeeper ensemble of real servers, one process per node.
type Ensemble struct {
	t     testing.TB
	nodes []*Server
}

// StartEnsemble starts one server per node (ids 1..n), reached through dial
// (net.DialTimeout when nil), and waits until every one serves a session.
// The servers are killed when the test ends.
func StartEnsemble(t testing.TB, nodes []Node, dial Dialer) *Ensemble {
	t.Helper()
	in, err := zkinstall.Find()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("zktest: CI=true requires a ZooKeeper installation: %v", err)
		}
		t.Skipf("\n\n*** SKIPPING %s: tests against a real ZooKeeper did NOT run ***\n*** %v ***\n\n", t.Name(), err)
	}
	if dial == nil {
		dial = net.DialTimeout
	}
	e := &Ensemble{t: t}
	dir := t.TempDir()
	var peers []zkinstall.Peer
	taken := map[int]bool{}
	for i, n := range nodes {
		s := &Server{t: t, install: in, dir: filepath.Join(dir, fmt.Sprintf("zk%d", i+1)), host: n.Host, exec: n.Exec, dial: dial, myid: i + 1}
		p := zkinstall.Peer{ID: i + 1, Host: n.Host, QuorumPort: 2888, ElectionPort: 3888}
		s.port = 2181
		if n.Host == "" {
			s.host, p.Host = "127.0.0.1", "127.0.0.1"
			ports := make([]int, 3)
			for j := range ports {
				for ports[j] == 0 || taken[ports[j]] {
					if ports[j], err = freePort(); err != nil {
						t.Fatal(err)
					}
				}
				taken[ports[j]] = true
			}
			s.port, p.QuorumPort, p.ElectionPort = ports[0], ports[1], ports[2]
		}
		peers = append(peers, p)
		e.nodes = append(e.nodes, s)
	}
	t.Cleanup(func() {
		for _, s := range e.nodes {
			s.Kill()
		}
		if t.Failed() {
			for i, s := range e.nodes {
				t.Logf("zookeeper node %d output:\n%s", i+1, s.output())
			}
		}
	})
	for _, s := range e.nodes {
		s.peers = peers
		if err := s.launch(); err != nil {
			t.Fatalf("zktest: start ensemble node %d: %v", s.myid, err)
		}
	}
	for _, s := range e.nodes {
		if err := s.wait(); err != nil {
			t.Fatalf("zktest: ensemble node %d: %v\n%s", s.myid, err, s.output())
		}
	}
	return e
}

// Connect is the ensemble's zookeeper.connect (without chroot).
func (e *Ensemble) Connect() string {
	addrs := make([]string, len(e.nodes))
	for i, s := range e.nodes {
		addrs[i] = s.Addr()
	}
	return strings.Join(addrs, ",")
}

// Len is the number of nodes.
func (e *Ensemble) Len() int { return len(e.nodes) }

// Node is node id (1..Len).
func (e *Ensemble) Node(id int) *Server { return e.nodes[id-1] }

// Launch starts a stopped node without waiting for it: a node alone cannot
// serve until a quorum of the ensemble runs.
func (e *Ensemble) Launch(id int) error { return e.nodes[id-1].launch() }

// Wait waits until node id serves a session.
func (e *Ensemble) Wait(id int) error { return e.nodes[id-1].wait() }

// Mode is what node id's srvr command says it is: "leader", "follower",
// "standalone", or an error when it does not serve (no quorum, not running).
func (e *Ensemble) Mode(id int) (string, error) {
	s := e.nodes[id-1]
	out, err := fourLetters(s.Addr(), "srvr", s.dial)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(out), "\n") {
		if m, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(m), nil
		}
	}
	return "", fmt.Errorf("node %d: no mode in srvr output %q", id, out)
}

// Leader is the node that says it leads the ensemble.
func (e *Ensemble) Leader() (int, error) {
	var errs []error
	for id := 1; id <= len(e.nodes); id++ {
		m, err := e.Mode(id)
		if err != nil {
			errs = append(errs, fmt.Errorf("node %d: %w", id, err))
			continue
		}
		if m == "leader" {
			return id, nil
		}
	}
	errs = append(errs, errors.New("no node leads"))
	return 0, errors.Join(errs...)
}

// Mntr is node id's mntr output as key/value pairs.
func (e *Ensemble) Mntr(id int) (map[string]string, error) {
	s := e.nodes[id-1]
	out, err := fourLetters(s.Addr(), "mntr", s.dial)
	if err != nil {
		return nil, err
	}
	kv := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, "\t"); ok {
			kv[k] = v
		}
	}
	if len(kv) == 0 {
		return nil, fmt.Errorf("node %d: mntr answered %q", id, out)
	}
	return kv, nil
}

// ID is the node's myid (0 for a standalone server).
func (s *Server) ID() int { return s.myid }
