package quota

import (
	"math"
	"strconv"
	"testing"
	"time"
)

// TestResolvePrecedence removes the eight KIP-55 levels one at a time, most
// specific first, and checks that each time the next level decides, with the
// tags (which requests share the rate) Kafka gives it.
func TestResolvePrecedence(t *testing.T) {
	u, c, du, dc := Named("alice"), Named("app"), DefaultName(), DefaultName()
	levels := []struct {
		e            Entity
		user, client string
	}{
		{Entity{u, c}, "alice", "app"},
		{Entity{u, dc}, "alice", "app"},
		{Entity{User: u}, "alice", ""},
		{Entity{du, c}, "alice", "app"},
		{Entity{du, dc}, "alice", "app"},
		{Entity{User: du}, "alice", ""},
		{Entity{Client: c}, "", "app"},
		{Entity{Client: dc}, "", "app"},
	}
	m := map[Entity]Values{}
	for i, l := range levels {
		m[l.e] = Values{Produce: float64(i + 1)}
	}
	// Unrelated entities never apply.
	m[Entity{Named("bob"), c}] = Values{Produce: 100}
	m[Entity{User: Named("bob")}] = Values{Produce: 100}
	m[Entity{Client: Named("other")}] = Values{Produce: 100}
	for i, l := range levels {
		tbl := NewTable(m)
		bound, tags, ok := tbl.Resolve(Produce, "alice", "app")
		if !ok || bound != float64(i+1) || tags.User != l.user || tags.Client != l.client || tags.Kind != Produce {
			t.Fatalf("level %d (%s): got %v %+v %v", i+1, l.e, bound, tags, ok)
		}
		if _, _, ok := tbl.Resolve(Fetch, "alice", "app"); ok {
			t.Fatalf("level %d: a produce quota applied to fetches", i+1)
		}
		delete(m, l.e)
	}
	if _, _, ok := NewTable(m).Resolve(Produce, "alice", "app"); ok {
		t.Fatal("a quota applied with none of the eight levels set")
	}
}

func TestParseValues(t *testing.T) {
	v, err := ParseValues(map[string]string{"producer_byte_rate": "1024", "request_percentage": "12.5", "SCRAM-SHA-256": "x"})
	if err != nil || len(v) != 2 || v[Produce] != 1024 || v[Request] != 12.5 {
		t.Fatalf("got %v %v", v, err)
	}
	for _, bad := range []string{"-1", "0", "x", "NaN"} {
		if _, err := ParseValues(map[string]string{"consumer_byte_rate": bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestRateWindows checks the windowed rate against hand-computed figures: the
// minimum elapsed time of (samples-1) windows, the rolling of samples, and the
// expiry of samples older than samples*window.
func TestRateWindows(t *testing.T) {
	t0 := time.Unix(1000, 0)
	r := NewRate(11, time.Second)
	r.Record(1000, t0)
	// 1000 bytes 0.5 s after the start: elapsed counts as 10 s + 0.5 s.
	if got := r.Measure(t0.Add(500 * time.Millisecond)); math.Abs(got-1000/10.5) > 1e-9 {
		t.Fatalf("fresh rate = %v, want %v", got, 1000/10.5)
	}
	// One record per second for 20 s: only the last 11 samples count.
	for i := 1; i <= 20; i++ {
		r.Record(1000, t0.Add(time.Duration(i)*time.Second))
	}
	now := t0.Add(20*time.Second + 500*time.Millisecond)
	// Samples started at 10..20 s are kept (20.5-10 < 11), 11 of them, over 10.5 s.
	if got, want := r.Measure(now), 11*1000/10.5; math.Abs(got-want) > 1e-9 {
		t.Fatalf("rolling rate = %v, want %v", got, want)
	}
	// Long idle: every sample expires.
	if got := r.Measure(now.Add(time.Minute)); got != 0 {
		t.Fatalf("idle rate = %v, want 0", got)
	}
}

func TestThrottleTime(t *testing.T) {
	t0 := time.Unix(1000, 0)
	m := NewManager(Config{Samples: 11, Window: time.Second})
	m.SetTable(NewTable(map[Entity]Values{{User: Named("alice")}: {Produce: 100}}))
	if d := m.Record(Produce, "bob", "x", 1e9, t0); d != 0 {
		t.Fatalf("a user without quota throttled %v", d)
	}
	// Within the quota: 100 B/s over the minimum 10 s window allows 1000 bytes.
	if d := m.Record(Produce, "alice", "a", 1000, t0); d != 0 {
		t.Fatalf("throttled within quota: %v", d)
	}
	// 1050 bytes over 10 s = 105 B/s: 5% over, for a 10 s window = 500 ms.
	if d := m.Record(Produce, "alice", "b", 50, t0); d != 500*time.Millisecond {
		t.Fatalf("throttle = %v, want 500ms", d)
	}
	// Far over: the wait is the time the bound takes to pay the excess back
	// (1,000,050 bytes over the burst at 100 B/s), as Kafka gives it for byte
	// quotas, with no cap of one window.
	want := 10000500 * time.Millisecond
	if d := m.Record(Produce, "alice", "a", 1e6, t0); d != want {
		t.Fatalf("throttle = %v, want %v", d, want)
	}
	st := m.Stats(t0)
	if len(st) != 1 || st[0].User != "alice" || st[0].Client != "" || st[0].Throttle != want+500*time.Millisecond {
		t.Fatalf("stats = %+v", st)
	}
	// request_percentage is capped at one window, as Kafka caps it.
	m.SetTable(NewTable(map[Entity]Values{{User: Named("alice")}: {Request: 10}}))
	if d := m.Record(Request, "alice", "a", 1e6, t0); d != time.Second {
		t.Fatalf("request throttle = %v, want the 1s cap", d)
	}
}

// TestSensorsBounded floods the manager with client ids under a client-id
// default quota: the rates kept stay bounded, and the newcomers share one.
func TestSensorsBounded(t *testing.T) {
	t0 := time.Unix(1000, 0)
	m := NewManager(Config{Samples: 11, Window: time.Second})
	m.SetTable(NewTable(map[Entity]Values{{Client: DefaultName()}: {Produce: 100}}))
	for i := 0; i < maxSensors+50; i++ {
		m.Record(Produce, "", "c"+strconv.Itoa(i), 1, t0)
	}
	st := m.Stats(t0)
	if len(st) != maxSensors+1 {
		t.Fatalf("%d rates kept for %d clients", len(st), maxSensors+50)
	}
	// Once the first ones are idle for a whole window, they make room.
	m.Record(Produce, "", "late", 1, t0.Add(20*time.Second))
	if st := m.Stats(t0.Add(20 * time.Second)); len(st) != 1 {
		t.Fatalf("%d rates after expiry, want 1", len(st))
	}
}

// TestGreedyClientsHeldToTheirQuota runs five connections of one client id
// (as five instances of an application share a client.id), each always with
// another 1 MB request ready, against a 1 MiB/s quota measured over 4
// one-second samples. Each connection sends its next request as soon as its
// own mute ends. Together they must hold the quota over the 10 s after the
// first measuring span. With the throttle capped at one window, as Kafka caps
// only request_percentage, each connection could still send 1 MB a second and
// together they ran at about five times the quota.
func TestGreedyClientsHeldToTheirQuota(t *testing.T) {
	const bound, size, conns = 1 << 20, 1e6, 5
	m := NewManager(Config{Samples: 4, Window: time.Second})
	m.SetTable(NewTable(map[Entity]Values{{Client: Named("greedy")}: {Produce: bound}}))
	start := time.Unix(1000, 0)
	from, to := start.Add(4*time.Second), start.Add(14*time.Second)
	next := make([]time.Time, conns)
	for i := range next {
		next[i] = start.Add(time.Duration(i) * time.Millisecond)
	}
	sent := 0.0
	for {
		c := 0
		for i := range next {
			if next[i].Before(next[c]) {
				c = i
			}
		}
		now := next[c]
		if !now.Before(to) {
			break
		}
		d := m.Record(Produce, "", "greedy", size, now)
		if !now.Before(from) {
			sent += size
		}
		next[c] = now.Add(time.Millisecond + d)
	}
	if rate := sent / to.Sub(from).Seconds(); math.Abs(rate-bound)/bound > 0.15 {
		t.Fatalf("%d connections of one client at %.0f B/s together against its %d B/s quota", conns, rate, bound)
	}
}

// TestBucketRateChange lowers the rate of a bucket: what was taken within the
// old burst is not charged at the new rate (a level kept as such would owe
// 990 s here), and what was owed beyond it carries over in bytes.
func TestBucketRateChange(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var b Bucket
	if d := b.Take(1000, 1000, time.Second, t0); d != 0 {
		t.Fatalf("a whole burst waits %v", d)
	}
	if d := b.Take(0, 1, time.Second, t0); d != 0 {
		t.Fatalf("after lowering the rate the old burst is owed as %v", d)
	}
	if d := b.Take(2, 1, time.Second, t0); d != 2*time.Second {
		t.Fatalf("2 bytes at 1 B/s wait %v, want 2s", d)
	}
	var c Bucket
	c.Take(3000, 1000, time.Second, t0) // 2000 bytes beyond the burst
	if d := c.Take(0, 500, time.Second, t0); d != 4*time.Second {
		t.Fatalf("2000 bytes owed at 500 B/s wait %v, want 4s", d)
	}
	// Raised again after an idle hour: the credit is the new burst, no more.
	if d := c.Take(25000, 10000, time.Second, t0.Add(time.Hour)); d != 1500*time.Millisecond {
		t.Fatalf("wait %v, want 1.5s", d)
	}
}

// TestSharedBucketHoldsAtTheRate is the replication throttles' and the
// replica-move quota's bucket: one second of burst, debt waited out.
func TestSharedBucketHoldsAtTheRate(t *testing.T) {
	var q SharedBucket
	t0 := time.Unix(1000, 0)
	const rate = 1000
	if q.Take(0, rate, t0) > 0 {
		t.Fatal("a fresh quota is exceeded")
	}
	q.Take(3000, rate, t0) // a large batch puts it 2 s in debt
	for _, at := range []time.Duration{0, time.Second, 1900 * time.Millisecond} {
		if q.Take(0, rate, t0.Add(at)) == 0 {
			t.Errorf("not exceeded %v after taking 3 s worth", at)
		}
	}
	if q.Take(0, rate, t0.Add(2100*time.Millisecond)) > 0 {
		t.Error("still exceeded once the debt is paid back")
	}
	// Idle time refills at most one second's worth.
	q.Take(1500, rate, t0.Add(time.Hour))
	if q.Take(0, rate, t0.Add(time.Hour)) == 0 {
		t.Error("an idle hour banked more than one second of bytes")
	}
}

// TestSharedBucketLoweredHoldsAtOnce lowers a quota after a second used in full at a
// high rate: the next bytes wait for the new rate only, as when operators
// turn a reassignment's throttle down.
func TestSharedBucketLoweredHoldsAtOnce(t *testing.T) {
	var q SharedBucket
	t0 := time.Unix(1000, 0)
	q.Take(1<<30, 1<<30, t0)
	if q.Take(0, 1<<20, t0.Add(time.Millisecond)) > 0 {
		t.Fatal("a quota lowered to 1 MiB/s charges the GiB sent within the old second")
	}
	q.Take(3<<20, 1<<20, t0.Add(time.Millisecond))
	if q.Take(0, 1<<20, t0.Add(time.Second)) == 0 {
		t.Fatal("3 MiB taken at 1 MiB/s not held a second later")
	}
}
