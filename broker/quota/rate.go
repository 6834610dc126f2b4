package quota

import (
	"sync"
	"sync/atomic"
	"time"
)

// Rate is a windowed rate as Kafka's Rate over a SampledStat: Samples windows
// of Window each; a record goes into the newest sample, which is replaced by a
// new one once Window has passed since it started; samples older than
// Samples*Window are dropped. The rate is the total of the samples over the
// time since the oldest one started, counted as at least (Samples-1)*Window so
// that a fresh rate is not inflated by a short elapsed time.
type Rate struct {
	window  int64 // nanoseconds
	samples []sample
	cur     int
}

type sample struct {
	start int64 // unix nanoseconds; 0 = unused
	value float64
}

// NewRate makes a rate of n samples of window each (n >= 2, window > 0).
func NewRate(n int, window time.Duration) *Rate {
	if n < 2 {
		n = 2
	}
	if window <= 0 {
		window = time.Second
	}
	return &Rate{window: int64(window), samples: make([]sample, n)}
}

func (r *Rate) purge(now int64) {
	expire := r.window * int64(len(r.samples))
	for i := range r.samples {
		if s := &r.samples[i]; s.start != 0 && now-s.start >= expire {
			*s = sample{}
		}
	}
}

// Record adds v at now.
func (r *Rate) Record(v float64, now time.Time) {
	t := now.UnixNano()
	r.purge(t)
	s := &r.samples[r.cur]
	if s.start == 0 {
		s.start = t
	} else if t-s.start >= r.window {
		r.cur = (r.cur + 1) % len(r.samples)
		s = &r.samples[r.cur]
		*s = sample{start: t}
	}
	s.value += v
}

// Measure is the rate per second at now.
func (r *Rate) Measure(now time.Time) float64 {
	t := now.UnixNano()
	r.purge(t)
	total, oldest := 0.0, t
	for _, s := range r.samples {
		if s.start == 0 {
			continue
		}
		total += s.value
		oldest = min(oldest, s.start)
	}
	return total / (float64(r.elapsed(oldest, t)) / float64(time.Second))
}

// elapsed is the window the total is divided by, in nanoseconds.
func (r *Rate) elapsed(oldest, now int64) int64 {
	e := now - oldest
	full := e / r.window
	if minFull := int64(len(r.samples) - 1); full < minFull {
		e += (minFull - full) * r.window
	}
	return e
}

// throttle is how long a client whose rate is over bound must wait for the rate
// to fall back to the bound, as Kafka computes it: the excess over the bound,
// relative to the bound, times the window the rate is measured over, at most
// max.
func (r *Rate) throttle(bound float64, now time.Time, max time.Duration) time.Duration {
	v := r.Measure(now)
	if v <= bound {
		return 0
	}
	t := now.UnixNano()
	oldest := t
	for _, s := range r.samples {
		if s.start != 0 {
			oldest = min(oldest, s.start)
		}
	}
	d := time.Duration((v - bound) / bound * float64(r.elapsed(oldest, t)))
	return min(d, max)
}

// MaxThrottle bounds one throttle time, so that it fits the int32
// milliseconds of an answer's throttle_time_ms.
const MaxThrottle = time.Duration(1<<31-1) * time.Millisecond

// Bucket meters an amount against a rate as a leaky bucket: its level drains
// at the rate, and a level above what the rate drains in burst is owed as a
// wait. Unlike the throttle of a windowed rate, which assumes that the
// client's samples stay until it has waited, the level forgets nothing it has
// not drained: however many connections share it, and however bursty they
// are, the amount taken over a long time is the rate's, plus burst's worth.
//
// What it keeps is the level's distance from burst's worth at the rate (debt;
// negative while within it), the tokens of a token bucket holding burst's
// worth with the sign turned. So a changed rate charges nothing for what was
// taken within the old burst: a lowered rate holds from the next Take on, and
// only what was owed beyond the burst carries over, in its amount.
type Bucket struct {
	debt float64
	at   int64 // unix nanoseconds of the last Take; 0: none yet, the bucket is empty
}

// Take adds v (negative to give back) at now and returns how long the taker
// must wait for the level to fall back to burst's worth of rate (0 when within
// it; at most MaxThrottle). rate must be positive.
func (b *Bucket) Take(v, rate float64, burst time.Duration, now time.Time) time.Duration {
	t := now.UnixNano()
	empty := -rate * burst.Seconds()
	switch {
	case b.at == 0:
		b.debt = empty
	case t > b.at:
		b.debt -= rate * float64(t-b.at) / float64(time.Second)
	}
	b.at = max(b.at, t)
	b.debt = max(max(b.debt, empty)+v, empty)
	if b.debt <= 0 {
		return 0
	}
	return time.Duration(min(b.debt/rate*float64(time.Second), float64(MaxThrottle)))
}

// SharedBucket is a Bucket that many goroutines take from, with a burst of
// one second: the replication throttles and the replica-move quota.
type SharedBucket struct {
	mu sync.Mutex
	b  Bucket
}

// Take adds v at now against rate and returns the wait owed (Bucket.Take).
func (s *SharedBucket) Take(v, rate float64, now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Take(v, rate, time.Second, now)
}

// Config is the measuring configuration: quota.window.num and quota.window.size.seconds.
type Config struct {
	Samples int
	Window  time.Duration
}

// Manager measures every client's rates against the configured quotas.
type Manager struct {
	cfg   Config
	table atomic.Pointer[Table]

	mu      sync.Mutex
	sensors map[Tags]*sensor
	expired time.Time // last sweep of idle rates
}

type sensor struct {
	rate     *Rate
	owed     Bucket // bytes over the bound, for the byte kinds' throttles
	bound    float64
	last     time.Time
	throttle time.Duration // total throttle time given
}

// NewManager makes a manager with no quota configured.
func NewManager(cfg Config) *Manager {
	m := &Manager{cfg: cfg, sensors: map[Tags]*sensor{}}
	m.table.Store(NewTable(nil))
	return m
}

// SetTable replaces the configured quotas.
func (m *Manager) SetTable(t *Table) { m.table.Store(t) }

// Table is the configured quotas.
func (m *Manager) Table() *Table { return m.table.Load() }

// Active reports whether any quota is configured: one atomic load, for the
// request path to skip everything else when none is.
func (m *Manager) Active() bool { return !m.table.Load().Empty() }

// maxSensors bounds the rates kept; beyond it, rates idle for a whole window are
// dropped (at most once per window), and new clients share the overflow rate.
const maxSensors = 10000

// overflow names the shared rate of clients beyond maxSensors in metrics.
const overflow = "\x00overflow"

// Record adds value (bytes, or percent-seconds of request time) to the rate of
// user and clientID for kind k, and returns how long the client must be
// throttled for (0 when within its quota or without one).
func (m *Manager) Record(k Kind, user, clientID string, value float64, now time.Time) time.Duration {
	bound, tags, ok := m.table.Load().Resolve(k, user, clientID)
	if !ok {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sensor(k, tags, now)
	s.bound, s.last = bound, now
	s.rate.Record(value, now)
	var d time.Duration
	if k == Request {
		// As Kafka's request quota: the windowed rate's throttle, at most
		// one window.
		d = s.rate.throttle(bound, now, m.cfg.Window)
	} else {
		d = s.owed.Take(value, bound, m.burst(), now)
	}
	s.throttle += d
	return d
}

// MaxInWindow is the most a client may take of kind k in one answer without
// being throttled for it: its bound over (samples-1) windows, as Kafka caps a
// consumer's fetch size so a low consumer_byte_rate still lets records through
// (KAFKA-9677). ok is false when no quota applies.
func (m *Manager) MaxInWindow(k Kind, user, clientID string) (float64, bool) {
	bound, _, ok := m.table.Load().Resolve(k, user, clientID)
	if !ok {
		return 0, false
	}
	return bound * float64(max(m.cfg.Samples-1, 1)) * m.cfg.Window.Seconds(), true
}

// Unrecord takes back value recorded at now (a fetch answered without its data
// because it was throttled), giving no throttle time.
func (m *Manager) Unrecord(k Kind, user, clientID string, value float64, now time.Time) {
	_, tags, ok := m.table.Load().Resolve(k, user, clientID)
	if !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.sensors[tags]; s != nil {
		s.rate.Record(-value, now)
		if k != Request {
			s.owed.Take(-value, s.bound, m.burst(), now)
		}
	}
}

// burst is how long a byte quota's bound may be exceeded for before a client
// is throttled: (samples-1) windows, the shortest window Kafka's rate divides
// by, so a fresh client is throttled after the same first burst.
func (m *Manager) burst() time.Duration {
	return time.Duration(max(m.cfg.Samples-1, 1)) * m.cfg.Window
}

// sensor finds or makes the rate of tags (m.mu held).
func (m *Manager) sensor(k Kind, tags Tags, now time.Time) *sensor {
	if s := m.sensors[tags]; s != nil {
		return s
	}
	if len(m.sensors) >= maxSensors && now.Sub(m.expired) >= m.cfg.Window {
		m.expire(now)
		m.expired = now
	}
	if len(m.sensors) >= maxSensors {
		// Too many clients at once (a flood of client ids): the newcomers
		// share one rate, which throttles them more, never less.
		tags = Tags{Kind: k, User: overflow, Client: overflow}
		if s := m.sensors[tags]; s != nil {
			return s
		}
	}
	s := &sensor{rate: NewRate(m.cfg.Samples, m.cfg.Window)}
	m.sensors[tags] = s
	return s
}

// expire drops the rates not recorded into for a whole measuring window.
func (m *Manager) expire(now time.Time) {
	idle := m.cfg.Window * time.Duration(max(m.cfg.Samples, 2))
	for t, s := range m.sensors {
		if now.Sub(s.last) > idle {
			delete(m.sensors, t)
		}
	}
}

// Stat is one measured rate, for metrics.
type Stat struct {
	Tags
	Bound    float64
	Rate     float64
	Throttle time.Duration // total throttle time given
}

// Stats lists the measured rates.
func (m *Manager) Stats(now time.Time) []Stat {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Stat, 0, len(m.sensors))
	for t, s := range m.sensors {
		out = append(out, Stat{Tags: t, Bound: s.bound, Rate: s.rate.Measure(now), Throttle: s.throttle})
	}
	return out
}
