package brokerproc

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"
)

// ClusterSpec says how to run brokers sharing one ZooKeeper chroot.
type ClusterSpec struct {
	Bin       string
	N         int
	FirstID   int32  // the ids are FirstID .. FirstID+N-1
	Dir       string // broker <id> keeps its data in broker-<id>/data, its output in broker-<id>/broker.log
	ZooKeeper string // host:port/chroot
	Overrides []string
	Args      []string
	// InMemoryLogs keeps each broker's output in memory rather than in
	// broker-<id>/broker.log.
	InMemoryLogs bool
	ReadyTimeout time.Duration
}

// Cluster is a set of brokers; each keeps its port and directories across
// restarts.
type Cluster struct {
	spec    ClusterSpec
	ids     []int32
	brokers map[int32]*Broker
}

// NewCluster prepares the brokers, each on its own free port, without
// starting them.
func NewCluster(spec ClusterSpec) (*Cluster, error) {
	if spec.N < 1 || spec.ZooKeeper == "" {
		return nil, errors.New("brokerproc: ClusterSpec needs N >= 1 and ZooKeeper")
	}
	c := &Cluster{spec: spec, brokers: map[int32]*Broker{}}
	ports := map[int]bool{}
	for i := range spec.N {
		id := spec.FirstID + int32(i)
		port, err := FreePort()
		for err == nil && ports[port] {
			port, err = FreePort()
		}
		if err != nil {
			return nil, err
		}
		ports[port] = true
		dir := filepath.Join(spec.Dir, fmt.Sprintf("broker-%d", id))
		bs := Spec{Bin: spec.Bin, ID: id, Port: port, Dir: filepath.Join(dir, "data"), ZooKeeper: spec.ZooKeeper,
			Overrides: spec.Overrides, Args: spec.Args, ReadyTimeout: spec.ReadyTimeout}
		if !spec.InMemoryLogs {
			bs.LogFile = filepath.Join(dir, "broker.log")
		}
		b, err := New(bs)
		if err != nil {
			return nil, err
		}
		c.ids = append(c.ids, id)
		c.brokers[id] = b
	}
	return c, nil
}

// StartCluster starts every broker and waits until all are ready. On failure
// the brokers started are killed.
func StartCluster(spec ClusterSpec) (*Cluster, error) {
	c, err := NewCluster(spec)
	if err != nil {
		return nil, err
	}
	for _, b := range c.Brokers() {
		if err := b.Launch(); err != nil {
			c.Kill()
			return c, err
		}
	}
	for _, b := range c.Brokers() {
		if err := b.WaitReady(); err != nil {
			c.Kill()
			return c, err
		}
	}
	return c, nil
}

// ZooKeeper is the brokers' zookeeper.connect.
func (c *Cluster) ZooKeeper() string { return c.spec.ZooKeeper }

// Dir holds every broker's directory.
func (c *Cluster) Dir() string { return c.spec.Dir }

// IDs are the broker ids, sorted.
func (c *Cluster) IDs() []int32 { return slices.Clone(c.ids) }

// Broker is broker id, or nil.
func (c *Cluster) Broker(id int32) *Broker { return c.brokers[id] }

// Brokers are the brokers in id order.
func (c *Cluster) Brokers() []*Broker {
	out := make([]*Broker, 0, len(c.ids))
	for _, id := range c.ids {
		out = append(out, c.brokers[id])
	}
	return out
}

// Addrs are the listeners of all brokers, running or not, in id order.
func (c *Cluster) Addrs() []string {
	out := make([]string, 0, len(c.ids))
	for _, b := range c.Brokers() {
		out = append(out, b.Addr())
	}
	return out
}

// Kill sends SIGKILL to every running broker and waits until all are gone.
func (c *Cluster) Kill() {
	for _, b := range c.Brokers() {
		if b.Running() {
			_ = b.Kill()
		}
	}
}

// Stop stops every running broker (SIGTERM, then SIGKILL after timeout), one
// after the other; the error joins those of brokers that did not exit cleanly.
func (c *Cluster) Stop(timeout time.Duration) error {
	var errs []error
	for _, b := range c.Brokers() {
		if err := b.Stop(timeout); err != nil {
			errs = append(errs, fmt.Errorf("broker %d: %w", b.ID(), err))
		}
	}
	return errors.Join(errs...)
}
