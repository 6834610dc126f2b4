package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// StateFile records what `ktool cluster up` started, in the cluster directory.
const StateFile = "cluster.json"

// Modes of a running local cluster.
const (
	ModeZooKeeper = "zookeeper" // broker processes coordinated by ZooKeeper
	ModeEmbedded  = "embedded"  // one supervisor process on the embedded store
)

// State is DIR/cluster.json: the processes a cluster owns, so that status,
// kill, start and down act on them and on nothing else.
type State struct {
	Version int    `json:"version"`
	Dir     string `json:"dir"`
	Mode    string `json:"mode"`
	// ZooKeeper is the brokers' zookeeper.connect (ZooKeeper mode).
	ZooKeeper string `json:"zookeeper,omitempty"`
	// ZooKeeperProcess is set when the cluster started ZooKeeper itself.
	ZooKeeperProcess *Proc `json:"zookeeper_process,omitempty"`
	// ZooKeeperEnsemble are the nodes (ids 1..n in order) of the ZooKeeper
	// ensemble the cluster started (--zookeeper-nodes 3 or 5).
	ZooKeeperEnsemble []*Proc `json:"zookeeper_ensemble,omitempty"`
	// Supervisor and Socket are the supervisor process and its control
	// socket (embedded mode).
	Supervisor *Proc          `json:"supervisor,omitempty"`
	Socket     string         `json:"socket,omitempty"`
	Brokers    []BrokerRecord `json:"brokers"`
	// Security is how ktool authenticates to a secure cluster (its admin user).
	Security *cmdutil.Security `json:"security,omitempty"`
}

// clientOpts are the TLS and SASL options to reach the cluster's brokers.
func (st *State) clientOpts(f *cmdutil.Factory) []kgo.Opt {
	if st.Security == nil {
		return nil
	}
	opts, err := f.SecurityOpts(*st.Security)
	if err != nil {
		// Unreadable files: the connection fails and says so.
		return []kgo.Opt{kgo.Dialer(func(context.Context, string, string) (net.Conn, error) { return nil, err })}
	}
	return opts
}

// BrokerRecord is one broker of the cluster.
type BrokerRecord struct {
	ID          int32  `json:"id"`
	Addr        string `json:"addr"`
	MetricsAddr string `json:"metrics_addr,omitempty"`
	Config      string `json:"config"`
	Log         string `json:"log"`
	// Process is the broker's process (ZooKeeper mode), nil when never started.
	Process *Proc `json:"process,omitempty"`
}

// Broker returns the record of broker id.
func (s *State) Broker(id int32) (*BrokerRecord, error) {
	for i := range s.Brokers {
		if s.Brokers[i].ID == id {
			return &s.Brokers[i], nil
		}
	}
	ids := make([]int32, len(s.Brokers))
	for i, b := range s.Brokers {
		ids[i] = b.ID
	}
	return nil, fmt.Errorf("no broker %d in the cluster in %s (brokers: %v)", id, s.Dir, ids)
}

// Addrs lists every broker's address.
func (s *State) Addrs() []string {
	out := make([]string, len(s.Brokers))
	for i, b := range s.Brokers {
		out[i] = b.Addr
	}
	return out
}

// Running reports whether any process of the cluster is alive.
func (s *State) Running() bool {
	if s.Supervisor.Alive() || s.ZooKeeperProcess.Alive() {
		return true
	}
	for _, p := range s.ZooKeeperEnsemble {
		if p.Alive() {
			return true
		}
	}
	for _, b := range s.Brokers {
		if b.Process.Alive() {
			return true
		}
	}
	return false
}

// ErrNoCluster says a directory holds no cluster started by `ktool cluster up`.
var ErrNoCluster = errors.New("no cluster")

// LoadState reads DIR/cluster.json.
func LoadState(dir string) (*State, error) {
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s: start one with `ktool cluster up --dir %s`", ErrNoCluster, dir, dir)
	}
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, StateFile), err)
	}
	if s.Version != 1 {
		return nil, fmt.Errorf("%s: unknown version %d", filepath.Join(dir, StateFile), s.Version)
	}
	return &s, nil
}

// Save writes the state atomically.
func (s *State) Save() error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(s.Dir, StateFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// lockDir takes DIR/cluster.lock, so two commands never change the same
// cluster at once; the lock dies with the process.
func lockDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "cluster.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("another ktool cluster command is working on %s", dir)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// zooKeeperDown says why the ZooKeeper the cluster started cannot serve, if
// it cannot: the single server has exited, or fewer than a majority of the
// ensemble's nodes run.
func (s *State) zooKeeperDown() error {
	if s.ZooKeeperProcess != nil && !s.ZooKeeperProcess.Alive() {
		return exitedError("ZooKeeper", s.ZooKeeperProcess)
	}
	if len(s.ZooKeeperEnsemble) == 0 {
		return nil
	}
	alive := 0
	var dead *Proc
	for _, p := range s.ZooKeeperEnsemble {
		if p.Alive() {
			alive++
		} else {
			dead = p
		}
	}
	if alive <= len(s.ZooKeeperEnsemble)/2 {
		return fmt.Errorf("only %d of the %d ZooKeeper nodes run, no quorum: %w", alive, len(s.ZooKeeperEnsemble), exitedError("a ZooKeeper node", dead))
	}
	return nil
}
