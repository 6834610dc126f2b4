package replica

import "testing"

func TestWatchersForgetWaitsThatEnded(t *testing.T) {
	var s watchers
	w1, w2 := NewWaiter(), NewWaiter()
	s.add(w1)
	s.add(w1)
	s.add(w2)
	if len(s.ws) != 2 {
		t.Fatalf("a waiter registered twice is kept twice: %d", len(s.ws))
	}
	s.remove(w1)
	if len(s.ws) != 1 || s.ws[0] != w2 {
		t.Fatalf("remove left %v", s.ws)
	}
	s.wakeAll()
	select {
	case <-w2.C:
	default:
		t.Fatal("w2 not woken")
	}
	select {
	case <-w1.C:
		t.Fatal("a removed waiter was woken")
	default:
	}
	if len(s.ws) != 0 {
		t.Fatal("wakeAll must forget the waiters")
	}
}
