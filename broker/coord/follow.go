package coord

import (
	"context"
	"errors"
	"sort"
	"time"
)

// notificationExpiry is how old a change notification (a sequential child of
// /config/changes, /kafka-acl-changes or /kafka-acl-extended-changes) must be
// before a follower deletes it, as Kafka's brokers purge them after 15 minutes:
// every broker has long read it by then. Tests shorten it.
var notificationExpiry = 15 * time.Minute

// Follow calls fn, in name order, for every child of dir whose name sorts
// after last (sequential names sort by their sequence) until ctx ends or the
// session ends. A lost connection is waited out while the session lives: the
// follower lists dir again and misses nothing, since a notification is passed
// to fn only once its data was read. Each time it wakes, it deletes the
// notifications it knows of that are older than notificationExpiry, those
// present at the start included.
func Follow(ctx context.Context, s Store, dir, last string, fn func(name string, data []byte)) {
	created := map[string]time.Time{} // notifications met and not yet purged
	first := true
	for ctx.Err() == nil {
		names, _, ch, err := s.ChildrenW(ctx, dir)
		if err != nil {
			if !errors.Is(err, ErrConnectionLoss) || !waitReconnect(ctx, s) {
				return
			}
			continue
		}
		sort.Strings(names)
		lost := false
		for _, n := range names {
			if n <= last {
				if first {
					if ok, st, err := s.Exists(ctx, dir+"/"+n); err == nil && ok {
						created[n] = st.Ctime
					}
				}
				continue
			}
			data, st, err := s.Get(ctx, dir+"/"+n)
			if errors.Is(err, ErrConnectionLoss) {
				lost = true
				break
			}
			// ErrNoNode: purged by another broker, so older than any change
			// this follower has not seen yet.
			if err == nil {
				fn(n, data)
				created[n] = st.Ctime
			}
			last = n
		}
		first = false
		purge(ctx, s, dir, created)
		if lost {
			if !waitReconnect(ctx, s) {
				return
			}
			continue
		}
		select {
		case <-ctx.Done():
			return
		case ev := <-ch:
			if ev.Err != nil && (!errors.Is(ev.Err, ErrConnectionLoss) || !waitReconnect(ctx, s)) {
				return
			}
		}
	}
}

// purge deletes the notifications older than notificationExpiry; a delete
// that fails on a lost connection is tried again next time.
func purge(ctx context.Context, s Store, dir string, created map[string]time.Time) {
	for n, at := range created {
		if time.Since(at) <= notificationExpiry {
			continue
		}
		if err := s.Delete(ctx, dir+"/"+n, AnyVersion); err == nil || errors.Is(err, ErrNoNode) {
			delete(created, n)
		}
	}
}

// waitReconnect waits a second for a lost connection to come back; false when
// ctx or the session ended meanwhile.
func waitReconnect(ctx context.Context, s Store) bool {
	select {
	case <-ctx.Done():
		return false
	case <-s.Expired():
		return false
	case <-time.After(time.Second):
		return true
	}
}
