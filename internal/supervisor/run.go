package supervisor

import (
	"context"
	"errors"
	"time"
)

// Run is a supervisor process: it answers control requests on socket from
// the start, starts every broker, calls ready once each has joined the
// cluster, and runs until ctx ends or a shutdown is requested; then it stops
// the brokers cleanly within stopTimeout.
func Run(ctx context.Context, opts Options, socket string, stopTimeout time.Duration, ready func()) error {
	s, err := New(opts)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
		defer cancel()
		if cerr := s.Close(sctx); cerr != nil {
			s.logger.Error("stopping brokers", "err", cerr)
		}
	}()
	ln, err := Listen(ctx, socket)
	if err != nil {
		return err
	}
	serveCtx, stopServing := context.WithCancel(ctx)
	defer stopServing()
	served := make(chan error, 1)
	go func() { served <- s.Serve(serveCtx, ln) }()
	if err := s.startAll(serveCtx); err != nil {
		stopServing()
		<-served
		return err
	}
	if ready != nil {
		ready()
	}
	err = <-served
	if errors.Is(err, ErrShutdown) {
		return nil
	}
	return err
}

func (s *Supervisor) startAll(ctx context.Context) error {
	for _, id := range s.IDs() {
		if err := s.Start(ctx, id); err != nil {
			return err
		}
	}
	for _, id := range s.IDs() {
		if err := s.WaitReady(ctx, id); err != nil {
			return err
		}
	}
	return nil
}
