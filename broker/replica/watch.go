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
	defer s.mu.Unlock()
	for _, x := range s.ws {
		if x == w {
			return
		}
	}
	s.ws = append(s.ws, w)
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

// remove forgets w (a wait that ended without being woken).
func (s *watchers) remove(w *Waiter) {
	s.mu.Lock()
	for i, x := range s.ws {
		if x == w {
			s.ws[i] = s.ws[len(s.ws)-1]
			s.ws[len(s.ws)-1] = nil
			s.ws = s.ws[:len(s.ws)-1]
			break
		}
	}
	s.mu.Unlock()
}
