package replica

import "sync"

// Waiter is woken (at most once per registration) when something it watches changes.
// One Waiter may watch several partitions: a fetch over many partitions waits once.
type Waiter struct{ C chan struct{} }

// NewWaiter returns a Waiter.
func NewWaiter() *Waiter { return &Waiter{C: make(chan struct{}, 1)} }

func (w *Waiter) wake() {
	select {
	case w.C <- struct{}{}:
	default:
	}
}

// watchers is the set of waiters parked on one partition.
type watchers struct {
	mu sync.Mutex
	ws []*Waiter
}

func (s *watchers) add(w *Waiter) {
	s.mu.Lock()
	s.ws = append(s.ws, w)
	s.mu.Unlock()
}

// wakeAll wakes and forgets every waiter; a waiter that wants more registers again.
func (s *watchers) wakeAll() {
	s.mu.Lock()
	ws := s.ws
	s.ws = nil
	s.mu.Unlock()
	for _, w := range ws {
		w.wake()
	}
}
