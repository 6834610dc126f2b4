package broker

import (
	"context"
	"sync"

	"github.com/ktoolhq/ktool/broker/controller"
	"github.com/ktoolhq/ktool/broker/coord"
)

// controllerRunner runs this broker's part in controller election for the current
// session; it is restarted with each new session.
type controllerRunner struct {
	b       *Broker
	elector *controller.Elector

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

func newControllerRunner(b *Broker) *controllerRunner {
	cfg, s := b.cfg, b.cfg.Settings()
	return &controllerRunner{b: b, elector: controller.NewElector(controller.Config{
		BrokerID: b.id,
		Logger:   b.logger,
		Unclean: func(topic string) bool {
			return cfg.Topic(b.topicOverrides(topic)).UncleanLeaderElection
		},
		AutoRebalance:          s.AutoLeaderRebalance,
		ImbalancePercentage:    s.LeaderImbalancePercentage,
		ImbalanceCheckInterval: s.LeaderImbalanceCheckPeriod,
		RequestTimeout:         s.ControllerSocketTimeout,
		InterBrokerListener:    b.interBroker.Name,
		Dial:                   b.dialer.Dial,
		Seed:                   b.meta.controllerSeed,
	})}
}

func (r *controllerRunner) start(s coord.Store) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ctx, cancel := context.WithCancel(r.b.ctx)
	r.cancel, r.done = cancel, make(chan struct{})
	done := r.done
	go func() {
		defer close(done)
		r.elector.Run(ctx, s)
	}()
}

func (r *controllerRunner) stop() {
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.cancel, r.done = nil, nil
	r.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// active returns the controller when this broker is it.
func (r *controllerRunner) active() *controller.Controller { return r.elector.Active() }

func (r *controllerRunner) isActive() bool { return r.active() != nil }
