package broker

import (
	"testing"
	"time"
)

func TestQuotaHoldsAtTheRate(t *testing.T) {
	var q quota
	t0 := time.Unix(1000, 0)
	const rate = 1000
	if q.exceeded(rate, t0) {
		t.Fatal("a fresh quota is exceeded")
	}
	q.take(rate, 3000, t0) // a large batch puts it 2 s in debt
	for _, at := range []time.Duration{0, time.Second, 1900 * time.Millisecond} {
		if !q.exceeded(rate, t0.Add(at)) {
			t.Errorf("not exceeded %v after taking 3 s worth", at)
		}
	}
	if q.exceeded(rate, t0.Add(2100*time.Millisecond)) {
		t.Error("still exceeded once the debt is paid back")
	}
	// Idle time refills at most one second's worth.
	q.take(rate, 1500, t0.Add(time.Hour))
	if !q.exceeded(rate, t0.Add(time.Hour)) {
		t.Error("an idle hour banked more than one second of bytes")
	}
}

// TestQuotaLoweredHoldsAtOnce lowers a quota after a second used in full at a
// high rate: the next bytes wait for the new rate only, as when operators
// turn a reassignment's throttle down.
func TestQuotaLoweredHoldsAtOnce(t *testing.T) {
	var q quota
	t0 := time.Unix(1000, 0)
	q.take(1<<30, 1<<30, t0)
	if q.exceeded(1<<20, t0.Add(time.Millisecond)) {
		t.Fatal("a quota lowered to 1 MiB/s charges the GiB sent within the old second")
	}
	q.take(1<<20, 3<<20, t0.Add(time.Millisecond))
	if !q.exceeded(1<<20, t0.Add(time.Second)) {
		t.Fatal("3 MiB taken at 1 MiB/s not held a second later")
	}
}
