package perf

import (
	"context"
	"time"
)

// clock is the time source of the throughput cap; tests substitute a virtual
// one so the cap can be checked by counting instead of by timing.
type clock interface {
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// throttle caps the send rate: record i (counting from 0) may go out no
// earlier than i/rate seconds after the start. Falling behind is not made up
// by bursting beyond that schedule, and a negative rate means no cap.
type throttle struct {
	rate  float64
	clock clock
	start time.Time
}

func newThrottle(rate float64, c clock) *throttle {
	return &throttle{rate: rate, clock: c, start: c.Now()}
}

// delay is how long record i must wait when elapsed has passed since the start.
func (t *throttle) delay(i int64, elapsed time.Duration) time.Duration {
	if t.rate < 0 {
		return 0
	}
	due := time.Duration(float64(i) / t.rate * float64(time.Second))
	return max(due-elapsed, 0)
}

// wait blocks until record i may be sent.
func (t *throttle) wait(ctx context.Context, i int64) error {
	d := t.delay(i, t.clock.Now().Sub(t.start))
	if d == 0 {
		return nil
	}
	return t.clock.Sleep(ctx, d)
}
