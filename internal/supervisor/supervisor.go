package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/ktoolhq/ktool/broker"
	"github.com/ktoolhq/ktool/broker/config"
	"github.com/ktoolhq/ktool/broker/coord/embedded"
	"github.com/ktoolhq/ktool/internal/supervisor/control"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// BrokerSpec is one broker of the cluster.
type BrokerSpec struct {
	ID int32
	// Props are its settings under Kafka's server.properties names; broker.id
	// must equal ID and zookeeper.connect must be unset.
	Props map[string]string
	// LogFile receives the broker's log, appended across restarts.
	LogFile string
}

// Options configure a Supervisor.
type Options struct {
	// StoreDir holds the embedded coordination store shared by the brokers.
	StoreDir string
	Brokers  []BrokerSpec
	// Logger is the supervisor's own log (nil discards it).
	Logger *slog.Logger
	// Codecs resolves the brokers' compression codecs: the plugin catalog,
	// as for `ktool broker start` (nil: the built-ins only).
	Codecs broker.CodecSource
}

type running struct {
	b   *broker.Broker
	log *os.File
}

// Supervisor owns the store and the brokers running on it.
type Supervisor struct {
	opts   Options
	logger *slog.Logger
	store  *embedded.Server
	specs  map[int32]BrokerSpec

	// opMu serialises Start, Kill, Stop and Close so one broker is never
	// started and stopped at the same time.
	opMu    sync.Mutex
	mu      sync.Mutex
	running map[int32]*running
	closed  bool
}

// New checks the brokers' settings and opens the store.
func New(opts Options) (*Supervisor, error) {
	if opts.StoreDir == "" {
		return nil, errors.New("supervisor: no store directory")
	}
	if len(opts.Brokers) == 0 {
		return nil, errors.New("supervisor: no brokers")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	specs := map[int32]BrokerSpec{}
	for _, bs := range opts.Brokers {
		if _, dup := specs[bs.ID]; dup {
			return nil, fmt.Errorf("supervisor: broker %d listed twice", bs.ID)
		}
		cfg, err := config.NewBroker(bs.Props)
		if err != nil {
			return nil, fmt.Errorf("supervisor: broker %d: %w", bs.ID, err)
		}
		if got := cfg.Settings().BrokerID; got != bs.ID {
			return nil, fmt.Errorf("supervisor: broker %d has broker.id=%d", bs.ID, got)
		}
		if zk := cfg.Settings().ZooKeeperConnect; zk != "" {
			return nil, fmt.Errorf("supervisor: broker %d sets zookeeper.connect=%s; supervised brokers share the embedded store", bs.ID, zk)
		}
		if bs.LogFile == "" {
			return nil, fmt.Errorf("supervisor: broker %d has no log file", bs.ID)
		}
		specs[bs.ID] = bs
	}
	store, err := embedded.Open(opts.StoreDir)
	if err != nil {
		return nil, err
	}
	return &Supervisor{opts: opts, logger: opts.Logger, store: store, specs: specs, running: map[int32]*running{}}, nil
}

// IDs lists the broker ids the supervisor knows, sorted.
func (s *Supervisor) IDs() []int32 {
	ids := make([]int32, 0, len(s.specs))
	for id := range s.specs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// Start starts broker id on its data dir and port. It returns once the broker
// accepts connections; WaitReady waits until it has joined the cluster.
func (s *Supervisor) Start(ctx context.Context, id int32) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	spec, ok := s.specs[id]
	if !ok {
		return fmt.Errorf("no broker %d (brokers: %v)", id, s.IDs())
	}
	s.mu.Lock()
	closed, isRunning := s.closed, s.running[id] != nil
	s.mu.Unlock()
	if closed {
		return errors.New("supervisor is shutting down")
	}
	if isRunning {
		return fmt.Errorf("broker %d is already running", id)
	}
	cfg, err := config.NewBroker(spec.Props)
	if err != nil {
		return fmt.Errorf("broker %d: %w", id, err)
	}
	if err := os.MkdirAll(filepath.Dir(spec.LogFile), 0o755); err != nil {
		return err
	}
	logFile, err := os.OpenFile(spec.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelInfo}))
	b, err := broker.New(broker.Options{Config: cfg, Connector: s.store, Logger: logger, Codecs: s.opts.Codecs})
	if err != nil {
		logFile.Close()
		return fmt.Errorf("broker %d: %w", id, err)
	}
	if err := b.Start(ctx); err != nil {
		logFile.Close()
		return fmt.Errorf("starting broker %d: %w", id, err)
	}
	s.mu.Lock()
	s.running[id] = &running{b: b, log: logFile}
	s.mu.Unlock()
	s.logger.Info("broker started", "broker", id, "addr", b.Addr())
	return nil
}

// WaitReady waits until broker id is registered and known to the controller.
func (s *Supervisor) WaitReady(ctx context.Context, id int32) error {
	s.mu.Lock()
	r := s.running[id]
	s.mu.Unlock()
	if r == nil {
		return fmt.Errorf("broker %d is not running", id)
	}
	select {
	case <-r.b.Ready():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("broker %d not ready: %w", id, ctx.Err())
	}
}

// Kill stops broker id abruptly, as a crash would: no controlled shutdown,
// and its coordination session ends at once, so the controller sees it die.
func (s *Supervisor) Kill(id int32) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	r, err := s.take(id)
	if err != nil {
		return err
	}
	err = r.b.Halt()
	r.log.Close()
	s.logger.Info("broker killed", "broker", id)
	return err
}

func (s *Supervisor) take(id int32) (*running, error) {
	if _, ok := s.specs[id]; !ok {
		return nil, fmt.Errorf("no broker %d (brokers: %v)", id, s.IDs())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.running[id]
	if r == nil {
		return nil, fmt.Errorf("broker %d is not running", id)
	}
	delete(s.running, id)
	return r, nil
}

// Status reports every broker, sorted by id.
func (s *Supervisor) Status() []control.BrokerState {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]control.BrokerState, 0, len(s.specs))
	for _, id := range s.IDs() {
		st := control.BrokerState{ID: id}
		if r := s.running[id]; r != nil {
			st.Running = true
			st.Addr = r.b.Addr()
			select {
			case <-r.b.Ready():
				st.Ready = true
			default:
			}
		}
		out = append(out, st)
	}
	return out
}

// Close shuts every running broker down cleanly, one after the other with
// the controller last: each controlled shutdown then hands its leaderships
// to brokers that stay, through a controller that is still there. The last
// broker has nobody to hand them to, so it stops without asking (its logs
// are flushed and closed all the same): asked, it might still count a
// broker that just left and retry in vain. When ctx ends, the brokers left
// skip their controlled shutdown. Close then closes the store.
func (s *Supervisor) Close(ctx context.Context) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	all := s.running
	s.running = map[int32]*running{}
	s.mu.Unlock()
	order := make([]int32, 0, len(all))
	for id := range all {
		order = append(order, id)
	}
	controller := s.controller(ctx)
	sort.Slice(order, func(i, j int) bool {
		if (order[i] == controller) != (order[j] == controller) {
			return order[j] == controller
		}
		return order[i] < order[j]
	})
	var errs []error
	for i, id := range order {
		r := all[id]
		stop := r.b.Shutdown
		if i == len(order)-1 {
			stop = func(context.Context) error { return r.b.Halt() }
		}
		if err := stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("broker %d: %w", id, err))
		}
		r.log.Close()
		s.logger.Info("broker stopped", "broker", id)
	}
	errs = append(errs, s.store.Close())
	return errors.Join(errs...)
}

// controller is the id in /controller, or -1.
func (s *Supervisor) controller(ctx context.Context) int32 {
	st, err := s.store.Connect(ctx)
	if err != nil {
		return -1
	}
	defer st.Close()
	data, _, err := st.Get(ctx, zkdata.ControllerPath)
	if err != nil {
		return -1
	}
	info, err := zkdata.DecodeController(data)
	if err != nil {
		return -1
	}
	return info.BrokerID
}
