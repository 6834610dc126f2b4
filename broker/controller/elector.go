package controller

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// Config configures the controller a broker runs when it wins the election.
type Config struct {
	BrokerID int32
	Logger   *slog.Logger
	// Unclean reports whether unclean leader election is allowed for a topic
	// (topic config, else unclean.leader.election.enable).
	Unclean func(topic string) bool
	// Auto leader rebalance (auto.leader.rebalance.enable and friends).
	AutoRebalance          bool
	ImbalancePercentage    int
	ImbalanceCheckInterval time.Duration
	RequestTimeout         time.Duration
	// OnStateChange is called after every change the controller makes (tests, metrics).
	OnStateChange func()
	// InterBrokerListener names the listener the controller reaches brokers on
	// (inter.broker.listener.name); Dial connects and authenticates there.
	InterBrokerListener string
	Dial                func(ctx context.Context, addr string) (net.Conn, error)
	// Seed returns this broker's copy of the last controller's view of the
	// partitions (its metadata cache), or nil; a new controller starts from
	// it (seed.go).
	Seed func() Seed
}

// Elector runs controller election for one broker.
type Elector struct {
	cfg Config

	mu     sync.Mutex
	active *Controller
}

// NewElector returns an Elector.
func NewElector(cfg Config) *Elector {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	return &Elector{cfg: cfg}
}

// Active returns the running controller when this broker is the controller.
func (e *Elector) Active() *Controller {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.active
}

// Run takes part in elections on store until ctx ends or the session expires.
func (e *Elector) Run(ctx context.Context, store coord.Store) {
	log := e.cfg.Logger.With("component", "controller")
	for ctx.Err() == nil {
		select {
		case <-store.Expired():
			return
		default:
		}
		data := zkdata.EncodeController(zkdata.ControllerInfo{BrokerID: e.cfg.BrokerID, Timestamp: time.Now()})
		_, err := store.Create(ctx, zkdata.ControllerPath, data, coord.Ephemeral)
		switch {
		case err == nil:
			e.lead(ctx, store, log)
		case errors.Is(err, coord.ErrNodeExists):
			e.follow(ctx, store)
		default:
			log.Warn("controller election failed; retrying", "err", err)
			select {
			case <-ctx.Done():
			case <-store.Expired():
			case <-time.After(time.Second):
			}
		}
	}
}

// follow waits until /controller disappears (or the session or ctx ends).
func (e *Elector) follow(ctx context.Context, store coord.Store) {
	ok, _, ch, err := store.ExistsW(ctx, zkdata.ControllerPath)
	if err != nil {
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
		return
	}
	if !ok {
		return
	}
	select {
	case <-ctx.Done():
	case <-ch:
	}
}

// lead bumps the controller epoch and runs the controller until it must resign.
func (e *Elector) lead(ctx context.Context, store coord.Store, log *slog.Logger) {
	epoch, version, err := bumpEpoch(ctx, store)
	if err != nil {
		log.Error("could not increment the controller epoch; resigning", "err", err)
		_ = store.Delete(context.WithoutCancel(ctx), zkdata.ControllerPath, -1)
		return
	}
	log.Info("became controller", "controller_epoch", epoch)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := newController(cctx, e.cfg, store, epoch, version)
	e.mu.Lock()
	e.active = c
	e.mu.Unlock()
	// Resign when our /controller znode goes away (deleted by an operator, or our
	// session expired) — a controller must stop acting at once.
	go func() {
		for cctx.Err() == nil {
			ok, st, ch, err := store.ExistsW(cctx, zkdata.ControllerPath)
			if err != nil || !ok || st.EphemeralOwner != store.SessionID() {
				cancel()
				return
			}
			select {
			case <-cctx.Done():
				return
			case <-ch:
			}
		}
	}()
	go func() {
		select {
		case <-store.Expired():
			cancel()
		case <-cctx.Done():
		}
	}()
	c.run(cctx)
	e.mu.Lock()
	e.active = nil
	e.mu.Unlock()
	log.Info("resigned as controller", "controller_epoch", epoch)
	// Give up /controller if we still hold it, so another broker can take over.
	dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer dcancel()
	if _, st, err := store.Get(dctx, zkdata.ControllerPath); err == nil && st.EphemeralOwner == store.SessionID() {
		_ = store.Delete(dctx, zkdata.ControllerPath, st.Version)
	}
}

// bumpEpoch increments /controller_epoch with a conditional write.
func bumpEpoch(ctx context.Context, store coord.Store) (int32, int32, error) {
	for {
		data, st, err := store.Get(ctx, zkdata.ControllerEpochPath)
		if errors.Is(err, coord.ErrNoNode) {
			if _, err := store.Create(ctx, zkdata.ControllerEpochPath, zkdata.EncodeControllerEpoch(1), coord.Persistent); err == nil {
				return 1, 0, nil
			} else if !errors.Is(err, coord.ErrNodeExists) {
				return 0, 0, err
			}
			continue
		}
		if err != nil {
			return 0, 0, err
		}
		cur, err := zkdata.DecodeControllerEpoch(data)
		if err != nil {
			return 0, 0, err
		}
		nst, err := store.Set(ctx, zkdata.ControllerEpochPath, zkdata.EncodeControllerEpoch(cur+1), st.Version)
		if errors.Is(err, coord.ErrBadVersion) {
			continue
		}
		if err != nil {
			return 0, 0, err
		}
		return cur + 1, nst.Version, nil
	}
}
