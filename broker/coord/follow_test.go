package coord_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/broker/coord/embedded"
)

// lossy is a store whose next Gets fail as a lost ZooKeeper connection does.
type lossy struct {
	coord.Store
	failGets atomic.Int32
}

func (l *lossy) Get(ctx context.Context, path string) ([]byte, coord.Stat, error) {
	if l.failGets.Add(-1) >= 0 {
		return nil, coord.Stat{}, coord.ErrConnectionLoss
	}
	return l.Store.Get(ctx, path)
}

func session(t *testing.T) coord.Store {
	t.Helper()
	srv, err := embedded.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	s, err := srv.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// follower runs Follow on dir and records what it passed on.
type follower struct {
	mu   sync.Mutex
	seen []string
	done chan struct{}
}

func follow(ctx context.Context, s coord.Store, dir, last string) *follower {
	f := &follower{done: make(chan struct{})}
	go func() {
		defer close(f.done)
		coord.Follow(ctx, s, dir, last, func(_ string, data []byte) {
			f.mu.Lock()
			f.seen = append(f.seen, string(data))
			f.mu.Unlock()
		})
	}()
	return f
}

func (f *follower) wait(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.mu.Lock()
		got := slices.Clone(f.seen)
		f.mu.Unlock()
		if slices.Equal(got, want) {
			return
		}
		if len(got) > len(want) || time.Now().After(deadline) {
			t.Fatalf("followed %q, want %q", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func notify(t *testing.T, s coord.Store, dir, data string) {
	t.Helper()
	if _, err := s.Create(context.Background(), dir+"/change_", []byte(data), coord.PersistentSequential); err != nil {
		t.Fatal(err)
	}
}

// A notification whose read fails on a lost connection is read again once
// the connection is back, not skipped: the follower used to move past it.
func TestFollowMissesNothingOnConnectionLoss(t *testing.T) {
	s := &lossy{Store: session(t)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := s.Create(ctx, "/changes", nil, coord.Persistent); err != nil {
		t.Fatal(err)
	}
	f := follow(ctx, s, "/changes", "")
	notify(t, s, "/changes", "a")
	f.wait(t, "a")
	s.failGets.Store(2)
	notify(t, s, "/changes", "b")
	notify(t, s, "/changes", "c")
	f.wait(t, "a", "b", "c")
	cancel()
	<-f.done
}

// Notifications older than the expiry are deleted when the follower wakes,
// those there before it started included; none is passed on twice.
func TestFollowPurgesOldNotifications(t *testing.T) {
	defer coord.SetNotificationExpiry(300 * time.Millisecond)()
	s := session(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := s.Create(ctx, "/changes", nil, coord.Persistent); err != nil {
		t.Fatal(err)
	}
	notify(t, s, "/changes", "old-1")
	notify(t, s, "/changes", "old-2")
	names, _, err := s.Children(ctx, "/changes")
	if err != nil {
		t.Fatal(err)
	}
	f := follow(ctx, s, "/changes", slices.Max(names))
	time.Sleep(400 * time.Millisecond) // the two become older than the expiry
	notify(t, s, "/changes", "new")
	f.wait(t, "new")
	deadline := time.Now().Add(10 * time.Second)
	for {
		left, _, err := s.Children(ctx, "/changes")
		if err != nil {
			t.Fatal(err)
		}
		if len(left) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("notifications left: %v", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-f.done
	if _, _, err := s.Get(context.Background(), "/changes/"+slices.Max(names)); !errors.Is(err, coord.ErrNoNode) {
		t.Fatalf("an old notification is still there: %v", err)
	}
}
