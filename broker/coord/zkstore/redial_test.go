package zkstore

import (
	"errors"
	"net"
	"testing"
	"time"
)

func TestDialBound(t *testing.T) {
	for _, tc := range []struct {
		session time.Duration
		servers int
		zk      time.Duration
		want    time.Duration
	}{
		{4 * time.Second, 3, time.Second, 333333333}, // the netns tests
		{18 * time.Second, 3, time.Second, time.Second},
		{6 * time.Second, 1, time.Second, time.Second},
		{4 * time.Second, 5, time.Second, minDial},
		{2 * time.Second, 0, time.Second, 500 * time.Millisecond},
		{time.Second, 3, 100 * time.Millisecond, 100 * time.Millisecond},
	} {
		if got := dialBound(tc.session, tc.servers, tc.zk); got != tc.want {
			t.Errorf("dialBound(%v, %d, %v) = %v, want %v", tc.session, tc.servers, tc.zk, got, tc.want)
		}
	}
}

func TestHandshakeBound(t *testing.T) {
	for _, tc := range []struct{ session, dial, want time.Duration }{
		{4 * time.Second, 333 * time.Millisecond, 666666666},
		{18 * time.Second, time.Second, 3 * time.Second},
		{time.Second, minDial, minDial},
	} {
		if got := handshakeBound(tc.session, tc.dial); got != tc.want {
			t.Errorf("handshakeBound(%v, %v) = %v, want %v", tc.session, tc.dial, got, tc.want)
		}
	}
}

func TestRoundPace(t *testing.T) {
	for session, want := range map[time.Duration]time.Duration{
		4 * time.Second:        500 * time.Millisecond,
		18 * time.Second:       time.Second,
		500 * time.Millisecond: minRoundPace,
	} {
		if got := roundPace(session); got != want {
			t.Errorf("roundPace(%v) = %v, want %v", session, got, want)
		}
	}
}

// fakeRedial is a redial on a clock that moves only when the policy sleeps
// or a dial takes its whole bound (a silent server).
type fakeRedial struct {
	*redial
	clock  time.Time
	silent map[string]bool
	dials  []string
	bounds []time.Duration
	slept  time.Duration
}

func newFakeRedial(t *testing.T, session time.Duration, servers []string, silent ...string) *fakeRedial {
	t.Helper()
	f := &fakeRedial{clock: time.Unix(1000, 0), silent: map[string]bool{}}
	for _, s := range silent {
		f.silent[s] = true
	}
	f.redial = newRedial(session, func(_, addr string, timeout time.Duration) (net.Conn, error) {
		f.dials = append(f.dials, addr)
		f.bounds = append(f.bounds, timeout)
		if f.silent[addr] {
			f.clock = f.clock.Add(timeout)
			return nil, errors.New("i/o timeout")
		}
		return nil, errors.New("refused")
	})
	f.now = func() time.Time { return f.clock }
	f.sleep = func(d time.Duration) {
		f.slept += d
		f.clock = f.clock.Add(d)
	}
	if err := f.Init(servers); err != nil {
		t.Fatal(err)
	}
	return f
}

// attempt is one turn of go-zookeeper's connect loop: Next, its 1 s sleep
// when retryStart, the dial.
func (f *fakeRedial) attempt() (server string, zkSlept bool) {
	server, retry := f.Next()
	if retry {
		f.clock = f.clock.Add(time.Second)
	}
	_, _ = f.Dial("tcp", server, time.Second)
	return server, retry
}

var threeServers = []string{"10.0.0.1:2181", "10.0.0.2:2181", "10.0.0.3:2181"}

// The connected server and the next one go silent: the third is dialled a
// third of a second after the loss is noticed, not a second.
func TestRedialSilentServers(t *testing.T) {
	f := newFakeRedial(t, 4*time.Second, threeServers)
	first, _ := f.attempt()
	f.Connected()
	f.clock = f.clock.Add(time.Hour)
	lost := f.clock
	second, retry := f.Next()
	if retry {
		t.Fatal("retryStart on the first server after a loss")
	}
	f.silent[first], f.silent[second] = true, true
	_, _ = f.Dial("tcp", second, time.Second)
	third, retry := f.attempt()
	if retry || third == first || third == second {
		t.Fatalf("third attempt: %s (retry %v) after %s, %s", third, retry, first, second)
	}
	if took := f.clock.Sub(lost); took != dialBound(4*time.Second, 3, time.Second) {
		t.Fatalf("third server dialled %v after the loss, want one bound", took)
	}
}

// While the session may live, rounds of refusing servers follow each other
// at the pace, without go-zookeeper's sleep; past the session timeout its
// sleep comes back; a stopped session gets it at once.
func TestRedialRounds(t *testing.T) {
	f := newFakeRedial(t, 4*time.Second, threeServers)
	f.attempt()
	f.Connected()
	lost := f.clock
	pace := roundPace(4 * time.Second)
	for i := 0; ; i++ {
		at := f.clock.Sub(lost)
		if _, zkSlept := f.attempt(); zkSlept {
			if at < 4*time.Second {
				t.Fatalf("attempt %d, %v after the loss: retryStart while the session may live", i, at)
			}
			break
		}
		if i > 100 {
			t.Fatal("the clock does not move: rounds are not paced")
		}
	}
	if f.slept < 4*time.Second || f.slept > 4*time.Second+pace {
		t.Fatalf("paced %v in a session timeout of refusing servers, want rounds %v apart", f.slept, pace)
	}
	retries := 0
	for range 6 {
		if _, zkSlept := f.attempt(); zkSlept {
			retries++
		}
	}
	if retries != 2 {
		t.Fatalf("%d retryStarts in two rounds past the session timeout, want 2", retries)
	}
	for _, b := range f.bounds {
		if b != dialBound(4*time.Second, 3, time.Second) {
			t.Fatalf("dial bound %v", b)
		}
	}

	g := newFakeRedial(t, 4*time.Second, threeServers)
	g.attempt()
	g.Connected()
	g.stop()
	retries = 0
	for range 3 {
		if _, zkSlept := g.attempt(); zkSlept {
			retries++
		}
	}
	if retries != 1 {
		t.Fatalf("stopped session: %d retryStarts in a round, want 1", retries)
	}
}

// Before the first session there is nothing to save: go-zookeeper's sleep.
func TestRedialFirstConnect(t *testing.T) {
	f := newFakeRedial(t, 4*time.Second, threeServers)
	retries := 0
	for range 7 {
		if _, zkSlept := f.attempt(); zkSlept {
			retries++
		}
	}
	if retries != 2 || f.slept != 0 {
		t.Fatalf("%d retryStarts and %v paced in seven attempts before any session, want 2 and 0", retries, f.slept)
	}
}

// Until the handshake is over, no deadline go-zookeeper sets (none, or
// 10 x 2/3 of the session) reaches past the handshake's bound.
func TestHandshakeConnClamps(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	end := time.Now().Add(time.Hour)
	h := &handshakeConn{Conn: a, deadline: end}
	defer h.Close()
	soon := time.Now().Add(time.Minute)
	for _, tc := range []struct{ in, want time.Time }{
		{time.Time{}, end},
		{end.Add(time.Hour), end},
		{soon, soon},
	} {
		if got := h.clamp(tc.in); !got.Equal(tc.want) {
			t.Errorf("during the handshake: clamp(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	h.finish()
	for _, in := range []time.Time{{}, end.Add(time.Hour)} {
		if got := h.clamp(in); !got.Equal(in) {
			t.Errorf("after the handshake: clamp(%v) = %v", in, got)
		}
	}
}
