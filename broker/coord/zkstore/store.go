package zkstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ktoolhq/ktool/broker/coord"
)

// openACL is what Kafka writes without zookeeper.set.acl: world, all
// permissions.
var openACL = zk.WorldACL(zk.PermAll)

// store is one ZooKeeper session; it implements coord.Store.
type store struct {
	chroot string
	id     int64
	// redial reconnects within the session timeout (redial.go).
	redial *redial

	mu   sync.Mutex
	conn *zk.Conn
	// state: the session ended by expiry or Close (nil while live).
	ended   error
	ready   chan struct{}
	readyOK bool
	expired chan struct{}
}

var _ coord.Store = (*store)(nil)

func (s *store) setConn(c *zk.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conn = c
}

// onEvent runs on go-zookeeper's connection goroutine, before it acts on the
// state change, so an expired session is marked dead before the client
// goes on to open a new session that this store must not use.
func (s *store) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch ev.State {
	case zk.StateHasSession:
		if !s.readyOK && s.ended == nil {
			s.readyOK = true
			close(s.ready)
		}
	case zk.StateExpired:
		if s.ended != nil || !s.readyOK {
			return
		}
		s.ended = coord.ErrSessionExpired
		close(s.expired)
		s.redial.stop()
		// Close waits for the server's answer; it must not block the
		// goroutine delivering this event.
		if c := s.conn; c != nil {
			go c.Close()
		}
	}
}

// check says why the session cannot be used, if it cannot.
func (s *store) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended
}

// dead maps a failure to the session's end when the session has ended, so
// a call racing with expiry reports the expiry.
func (s *store) dead(err error) error {
	s.mu.Lock()
	ended := s.ended
	s.mu.Unlock()
	if ended != nil && (errors.Is(err, coord.ErrClosed) || errors.Is(err, coord.ErrConnectionLoss) || errors.Is(err, coord.ErrSessionExpired)) {
		return ended
	}
	return err
}

// call runs fn against ZooKeeper, returning early when ctx ends; fn's
// request then completes in the background.
func (s *store) call(ctx context.Context, what, path string, fn func() error) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		if err == nil {
			return nil
		}
		mapped := s.dead(mapErr(err))
		return fmt.Errorf("zookeeper %s %s: %w", what, path, mapped)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *store) abs(path string) string {
	if s.chroot == "" {
		return path
	}
	if path == "/" {
		return s.chroot
	}
	return s.chroot + path
}

func (s *store) rel(path string) string {
	if s.chroot == "" {
		return path
	}
	r := strings.TrimPrefix(path, s.chroot)
	if r == "" {
		return "/"
	}
	return r
}

func (s *store) ensureChroot(ctx context.Context) error {
	parts := strings.Split(s.chroot[1:], "/")
	for i := range parts {
		p := "/" + strings.Join(parts[:i+1], "/")
		err := s.call(ctx, "create", p, func() error {
			_, err := s.conn.Create(p, nil, 0, openACL)
			return err
		})
		if err != nil && !errors.Is(err, coord.ErrNodeExists) {
			return err
		}
	}
	return nil
}

func toStat(st *zk.Stat) coord.Stat {
	if st == nil {
		return coord.Stat{}
	}
	return coord.Stat{
		Czxid: st.Czxid, Mzxid: st.Mzxid, Pzxid: st.Pzxid,
		Ctime: time.UnixMilli(st.Ctime), Mtime: time.UnixMilli(st.Mtime),
		Version: st.Version, Cversion: st.Cversion,
		EphemeralOwner: st.EphemeralOwner,
		DataLength:     st.DataLength, NumChildren: st.NumChildren,
	}
}

func flags(mode coord.CreateMode) (int32, error) {
	switch mode {
	case coord.Persistent:
		return 0, nil
	case coord.Ephemeral:
		return zk.FlagEphemeral, nil
	case coord.PersistentSequential:
		return zk.FlagSequence, nil
	case coord.EphemeralSequential:
		return zk.FlagEphemeral | zk.FlagSequence, nil
	}
	return 0, fmt.Errorf("invalid create mode %v", mode)
}

// watch turns go-zookeeper's one-shot channel into a coord one.
func (s *store) watch(in <-chan zk.Event) <-chan coord.Event {
	out := make(chan coord.Event, 1)
	go func() {
		defer close(out)
		ev, ok := <-in
		if !ok {
			out <- coord.Event{Type: coord.EventNone, Err: s.dead(coord.ErrClosed)}
			return
		}
		var typ coord.EventType
		switch ev.Type {
		case zk.EventNodeCreated:
			typ = coord.NodeCreated
		case zk.EventNodeDeleted:
			typ = coord.NodeDeleted
		case zk.EventNodeDataChanged:
			typ = coord.NodeDataChanged
		case zk.EventNodeChildrenChanged:
			typ = coord.NodeChildrenChanged
		default:
			err := ev.Err
			if err == nil {
				err = zk.ErrConnectionClosed
			}
			out <- coord.Event{Type: coord.EventNone, Path: s.rel(ev.Path), Err: s.dead(mapErr(err))}
			return
		}
		out <- coord.Event{Type: typ, Path: s.rel(ev.Path)}
	}()
	return out
}

func (s *store) SessionID() int64 { return s.id }

func (s *store) Expired() <-chan struct{} { return s.expired }

func (s *store) Close() error {
	s.mu.Lock()
	if s.ended != nil {
		s.mu.Unlock()
		return nil
	}
	s.ended = coord.ErrClosed
	c := s.conn
	s.mu.Unlock()
	s.redial.stop()
	c.Close()
	return nil
}

func (s *store) Create(ctx context.Context, path string, data []byte, mode coord.CreateMode) (string, error) {
	f, err := flags(mode)
	if err != nil {
		return "", err
	}
	if err := coord.ValidatePath(path, mode.IsSequential()); err != nil {
		return "", err
	}
	if err := coord.CheckWriteSize(coord.CreateOp(path, data, mode), len(s.chroot)); err != nil {
		return "", err
	}
	var name string
	err = s.call(ctx, "create", path, func() error {
		var err error
		name, err = s.conn.Create(s.abs(path), data, f, openACL)
		return err
	})
	if err != nil {
		return "", err
	}
	return s.rel(name), nil
}

func (s *store) CreateAll(ctx context.Context, path string, data []byte, mode coord.CreateMode) (string, error) {
	name, err := s.Create(ctx, path, data, mode)
	if !errors.Is(err, coord.ErrNoNode) {
		return name, err
	}
	parent := coord.Parent(path)
	parts := strings.Split(strings.TrimPrefix(parent, "/"), "/")
	for i := range parts {
		p := "/" + strings.Join(parts[:i+1], "/")
		if _, err := s.Create(ctx, p, nil, coord.Persistent); err != nil && !errors.Is(err, coord.ErrNodeExists) {
			return "", err
		}
	}
	return s.Create(ctx, path, data, mode)
}

func (s *store) Get(ctx context.Context, path string) ([]byte, coord.Stat, error) {
	if err := coord.ValidatePath(path, false); err != nil {
		return nil, coord.Stat{}, err
	}
	var data []byte
	var st *zk.Stat
	err := s.call(ctx, "get", path, func() error {
		var err error
		data, st, err = s.conn.Get(s.abs(path))
		return err
	})
	if err != nil {
		return nil, coord.Stat{}, err
	}
	return data, toStat(st), nil
}

func (s *store) GetW(ctx context.Context, path string) ([]byte, coord.Stat, <-chan coord.Event, error) {
	if err := coord.ValidatePath(path, false); err != nil {
		return nil, coord.Stat{}, nil, err
	}
	var data []byte
	var st *zk.Stat
	var ch <-chan zk.Event
	err := s.call(ctx, "get", path, func() error {
		var err error
		data, st, ch, err = s.conn.GetW(s.abs(path))
		return err
	})
	if err != nil {
		return nil, coord.Stat{}, nil, err
	}
	return data, toStat(st), s.watch(ch), nil
}

func (s *store) Exists(ctx context.Context, path string) (bool, coord.Stat, error) {
	if err := coord.ValidatePath(path, false); err != nil {
		return false, coord.Stat{}, err
	}
	var ok bool
	var st *zk.Stat
	err := s.call(ctx, "exists", path, func() error {
		var err error
		ok, st, err = s.conn.Exists(s.abs(path))
		return err
	})
	if err != nil || !ok {
		return false, coord.Stat{}, err
	}
	return true, toStat(st), nil
}

func (s *store) ExistsW(ctx context.Context, path string) (bool, coord.Stat, <-chan coord.Event, error) {
	if err := coord.ValidatePath(path, false); err != nil {
		return false, coord.Stat{}, nil, err
	}
	var ok bool
	var st *zk.Stat
	var ch <-chan zk.Event
	err := s.call(ctx, "exists", path, func() error {
		var err error
		ok, st, ch, err = s.conn.ExistsW(s.abs(path))
		return err
	})
	if err != nil {
		return false, coord.Stat{}, nil, err
	}
	if !ok {
		return false, coord.Stat{}, s.watch(ch), nil
	}
	return true, toStat(st), s.watch(ch), nil
}

func (s *store) Children(ctx context.Context, path string) ([]string, coord.Stat, error) {
	if err := coord.ValidatePath(path, false); err != nil {
		return nil, coord.Stat{}, err
	}
	var kids []string
	var st *zk.Stat
	err := s.call(ctx, "children", path, func() error {
		var err error
		kids, st, err = s.conn.Children(s.abs(path))
		return err
	})
	if err != nil {
		return nil, coord.Stat{}, err
	}
	sort.Strings(kids)
	return kids, toStat(st), nil
}

func (s *store) ChildrenW(ctx context.Context, path string) ([]string, coord.Stat, <-chan coord.Event, error) {
	if err := coord.ValidatePath(path, false); err != nil {
		return nil, coord.Stat{}, nil, err
	}
	var kids []string
	var st *zk.Stat
	var ch <-chan zk.Event
	err := s.call(ctx, "children", path, func() error {
		var err error
		kids, st, ch, err = s.conn.ChildrenW(s.abs(path))
		return err
	})
	if err != nil {
		return nil, coord.Stat{}, nil, err
	}
	sort.Strings(kids)
	return kids, toStat(st), s.watch(ch), nil
}

func (s *store) Set(ctx context.Context, path string, data []byte, version int32) (coord.Stat, error) {
	if err := coord.ValidatePath(path, false); err != nil {
		return coord.Stat{}, err
	}
	if err := coord.CheckWriteSize(coord.SetOp(path, data, version), len(s.chroot)); err != nil {
		return coord.Stat{}, err
	}
	var st *zk.Stat
	err := s.call(ctx, "set", path, func() error {
		var err error
		st, err = s.conn.Set(s.abs(path), data, version)
		return err
	})
	if err != nil {
		return coord.Stat{}, err
	}
	return toStat(st), nil
}

func (s *store) Delete(ctx context.Context, path string, version int32) error {
	if err := coord.ValidatePath(path, false); err != nil {
		return err
	}
	if path == "/" {
		return fmt.Errorf("delete /: %w", coord.ErrInvalidPath)
	}
	return s.call(ctx, "delete", path, func() error {
		return s.conn.Delete(s.abs(path), version)
	})
}

// DeleteAll deletes children first, like Kafka's deleteRecursive; it is not
// atomic, and retries when children appear while it runs.
func (s *store) DeleteAll(ctx context.Context, path string) error {
	if err := coord.ValidatePath(path, false); err != nil {
		return err
	}
	if path == "/" {
		return fmt.Errorf("delete all of /: %w", coord.ErrInvalidPath)
	}
	for {
		kids, _, err := s.Children(ctx, path)
		if errors.Is(err, coord.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, k := range kids {
			if err := s.DeleteAll(ctx, coord.Join(path, k)); err != nil {
				return err
			}
		}
		err = s.Delete(ctx, path, coord.AnyVersion)
		if err == nil || errors.Is(err, coord.ErrNoNode) {
			return nil
		}
		if !errors.Is(err, coord.ErrNotEmpty) {
			return err
		}
	}
}

func (s *store) Multi(ctx context.Context, ops ...coord.Op) error {
	if len(ops) == 0 {
		return s.check(ctx)
	}
	if err := coord.CheckMultiSize(ops, len(s.chroot)); err != nil {
		return err
	}
	reqs := make([]any, len(ops))
	for i, op := range ops {
		var err error
		reqs[i], err = s.request(op)
		if err != nil {
			return &coord.MultiError{Index: i, Op: op, Err: err}
		}
	}
	err := s.call(ctx, "multi", ops[0].Path, func() error {
		res, err := s.conn.Multi(reqs...)
		if err != nil {
			for i, r := range res {
				if r.Error != nil {
					return &opFailure{index: i, err: r.Error}
				}
			}
		}
		return err
	})
	var failed *opFailure
	if errors.As(err, &failed) {
		return &coord.MultiError{Index: failed.index, Op: ops[failed.index], Err: s.dead(mapErr(failed.err))}
	}
	return err
}

// opFailure carries the failing operation of a Multi out of the request
// goroutine.
type opFailure struct {
	index int
	err   error
}

func (f *opFailure) Error() string { return fmt.Sprintf("op %d: %v", f.index, f.err) }

func (s *store) request(op coord.Op) (any, error) {
	switch op.Type {
	case coord.OpCreate:
		f, err := flags(op.Mode)
		if err != nil {
			return nil, err
		}
		if err := coord.ValidatePath(op.Path, op.Mode.IsSequential()); err != nil {
			return nil, err
		}
		return &zk.CreateRequest{Path: s.abs(op.Path), Data: op.Data, Acl: openACL, Flags: f}, nil
	case coord.OpSet, coord.OpDelete, coord.OpCheck:
		if err := coord.ValidatePath(op.Path, false); err != nil {
			return nil, err
		}
		switch op.Type {
		case coord.OpSet:
			return &zk.SetDataRequest{Path: s.abs(op.Path), Data: op.Data, Version: op.Version}, nil
		case coord.OpDelete:
			return &zk.DeleteRequest{Path: s.abs(op.Path), Version: op.Version}, nil
		}
		return &zk.CheckVersionRequest{Path: s.abs(op.Path), Version: op.Version}, nil
	}
	return nil, fmt.Errorf("unknown op type %v", op.Type)
}
