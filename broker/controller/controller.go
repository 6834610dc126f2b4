package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// TP names a topic partition.
type TP struct {
	Topic     string
	Partition int32
}

func (tp TP) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// PartitionState is what the controller knows of a partition.
type PartitionState struct {
	Replicas []int32
	zkdata.LeaderIsr
	HasState bool // the state znode exists
}

// Controller is the active controller of the cluster.
type Controller struct {
	cfg          Config
	log          *slog.Logger
	store        coord.Store
	epoch        int32
	epochVersion int32
	// token is this epoch's secret in every request to brokers (token.go).
	token []byte

	events chan func()
	ctx    context.Context

	brokers     map[int32]zkdata.BrokerInfo
	assignments map[string]zkdata.TopicAssignment
	states      map[TP]*PartitionState
	deleting    map[string]bool
	shutting    map[int32]bool
	senders     map[int32]peer
	// What UpdateMetadata last told the brokers (sender.go): the view, the live
	// brokers, and per broker the registration (epoch) that had the full view.
	umSent    map[TP]umPartition
	umBrokers string
	umFull    map[int32]int64
	// offlineReplicas are, per live broker, the partitions whose replica there
	// is in a failed log dir, as its LeaderAndIsr answers said (logdirs.go).
	offlineReplicas map[int32]map[TP]bool
	// connect opens the channel to a broker (dial, unless a test records).
	connect func(id int32, addr string) peer

	snapMu sync.RWMutex
	snap   Snapshot
}

// Snapshot is a copy of the controller's view, for inspection.
type Snapshot struct {
	Epoch   int32
	Brokers []int32
	States  map[TP]PartitionState
}

func newController(ctx context.Context, cfg Config, store coord.Store, epoch, epochVersion int32) *Controller {
	c := &Controller{
		ctx: ctx,
		cfg: cfg, log: cfg.Logger.With("component", "controller", "controller_epoch", epoch),
		store: store, epoch: epoch, epochVersion: epochVersion,
		events:          make(chan func(), 256),
		brokers:         map[int32]zkdata.BrokerInfo{},
		assignments:     map[string]zkdata.TopicAssignment{},
		states:          map[TP]*PartitionState{},
		deleting:        map[string]bool{},
		shutting:        map[int32]bool{},
		senders:         map[int32]peer{},
		umFull:          map[int32]int64{},
		offlineReplicas: map[int32]map[TP]bool{},
	}
	c.connect = c.dial
	return c
}

// Epoch is the controller epoch.
func (c *Controller) Epoch() int32 { return c.epoch }

// Snapshot returns the controller's current view.
func (c *Controller) Snapshot() Snapshot {
	c.snapMu.RLock()
	defer c.snapMu.RUnlock()
	return c.snap
}

func (c *Controller) publish() {
	s := Snapshot{Epoch: c.epoch, States: make(map[TP]PartitionState, len(c.states))}
	for id := range c.brokers {
		s.Brokers = append(s.Brokers, id)
	}
	slices.Sort(s.Brokers)
	for tp, st := range c.states {
		s.States[tp] = *st
	}
	c.snapMu.Lock()
	c.snap = s
	c.snapMu.Unlock()
	if c.cfg.OnStateChange != nil {
		c.cfg.OnStateChange()
	}
}

// Drain waits until every request queued for the brokers has been delivered,
// or ctx ends. A controller that is shutting down calls it before it resigns:
// once another controller has taken over, the brokers refuse its requests, and
// the leaderships its controlled shutdown moved would wait for the new
// controller's failover to be told.
func (c *Controller) Drain(ctx context.Context) error {
	var waits []<-chan struct{}
	if err := c.call(ctx, func() {
		for _, s := range c.senders {
			waits = append(waits, s.drained())
		}
	}); err != nil {
		return err
	}
	for _, w := range waits {
		select {
		case <-w:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// retrySoon runs handler on the event loop again a second from now, until the
// controller ends. A watch handler whose store call failed (a lost connection
// during a ZooKeeper leader change) left no watch behind: only running it again
// sets one, and without it the controller would never hear of that znode
// again (a re-registered broker kept its old epoch and refused every request).
func (c *Controller) retrySoon(handler func()) {
	go func() {
		select {
		case <-time.After(time.Second):
			c.enqueue(handler)
		case <-c.ctx.Done():
		}
	}()
}

// enqueue runs f on the event loop.
func (c *Controller) enqueue(f func()) {
	select {
	case c.events <- f:
	case <-c.ctx.Done():
	}
}

// call runs f on the event loop and waits for it.
func (c *Controller) call(ctx context.Context, f func()) error {
	done := make(chan struct{})
	select {
	case c.events <- func() { f(); close(done) }:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.ctx.Done():
		return kerr.NotController
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.ctx.Done():
		return kerr.NotController
	}
}

func (c *Controller) run(ctx context.Context) {
	defer func() {
		for _, s := range c.senders {
			s.stop()
		}
	}()
	if err := c.failover(); err != nil {
		c.log.Error("controller failover failed; resigning", "err", err)
		return
	}
	var tick <-chan time.Time
	if c.cfg.AutoRebalance && c.cfg.ImbalanceCheckInterval > 0 {
		t := time.NewTicker(c.cfg.ImbalanceCheckInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case f := <-c.events:
			c.safely(f)
		case <-tick:
			c.safely(c.autoRebalance)
		}
		if c.fenced() {
			return
		}
	}
}

// safely runs one event; a bug in one event handler is logged and must not take
// the whole broker down with it.
func (c *Controller) safely(f func()) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("controller event failed", "panic", fmt.Sprint(r))
		}
	}()
	f()
}

// fenced reports whether a newer controller exists (our epoch znode write lost).
func (c *Controller) fenced() bool { return c.ctx.Err() != nil }

// failover loads everything and brings every broker up to date.
func (c *Controller) failover() error {
	ctx := c.ctx
	for _, p := range []string{zkdata.BrokerIDsPath, zkdata.TopicsPath, zkdata.DeleteTopicsPath, zkdata.IsrChangeNotificationPath, zkdata.LogDirEventNotificationPath, "/admin", zkdata.ConfigChangesPath} {
		if _, err := c.store.CreateAll(ctx, p, nil, coord.Persistent); err != nil && !errors.Is(err, coord.ErrNodeExists) {
			return err
		}
	}
	if err := c.writeToken(); err != nil {
		return err
	}
	start := time.Now()
	if err := c.loadBrokers(); err != nil {
		return err
	}
	seeded, err := c.loadTopics(c.seed())
	if err != nil {
		return err
	}
	if len(seeded) > 0 {
		// A warm start (seed.go): leaders from this broker's copy of the
		// states first, then the store's states, and on as below.
		c.log.Info("controller state loaded, partition states from this broker's copy", "brokers", len(c.brokers),
			"partitions", len(c.states), "copied", len(seeded), "took", time.Since(start).Round(time.Millisecond))
		if err := c.warmStart(); err != nil {
			return err
		}
		if err := c.readBack(seeded); err != nil {
			return err
		}
		c.log.Info("partition states read back from the store", "partitions", len(seeded), "took", time.Since(start).Round(time.Millisecond))
	} else {
		c.log.Info("controller state loaded", "brokers", len(c.brokers), "partitions", len(c.states), "took", time.Since(start).Round(time.Millisecond))
	}
	for id := range c.brokers {
		c.ensureSender(id)
	}
	// Elect leaders where needed and tell every broker everything, then take
	// brokers that died while there was no controller out of the ISRs: the
	// new leaders serve without waiting for those writes (two per three
	// partitions when the killed controller was a replica of all at RF=3).
	c.electOffline(c.allPartitions(), false)
	c.sendLeaderAndIsr(c.allPartitions(), nil)
	c.sendUpdateMetadata()
	c.publish()
	c.sendLeaderAndIsr(c.removeDeadFromIsr(c.allPartitions()), nil)
	c.sendUpdateMetadata()
	c.publish()
	c.watchDeletes()
	c.watchIsrChanges()
	c.watchLogDirEvents()
	c.watchPreferred()
	c.watchReassignZnode()
	c.checkReassignments()
	return nil
}

func (c *Controller) allPartitions() []TP {
	out := make([]TP, 0, len(c.states))
	for tp := range c.states {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}
