package embedded

import (
	"context"
	"fmt"

	"github.com/ktoolhq/ktool/broker/coord"
)

// session is one client session of the embedded server; it implements
// coord.Store. All its state is guarded by the server's mutex.
type session struct {
	srv     *Server
	id      int64
	expired chan struct{}
	// ended is why the session can no longer be used, nil while it is live.
	ended   error
	watches map[*watch]struct{}
}

var _ coord.Store = (*session)(nil)

func (c *session) fireAll(why error) {
	for w := range c.watches {
		w.fire(coord.Event{Type: coord.EventNone, Path: w.path, Err: why})
	}
	c.watches = map[*watch]struct{}{}
}

// lock takes the server lock for a call of this session, or says why the
// call cannot proceed; on success the caller must unlock.
func (c *session) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.srv.mu.Lock()
	if err := c.srv.usable(c); err != nil {
		c.srv.mu.Unlock()
		return err
	}
	return nil
}

func (c *session) SessionID() int64 { return c.id }

func (c *session) Expired() <-chan struct{} { return c.expired }

func (c *session) Close() error {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	if c.srv.closed || c.ended != nil {
		return nil
	}
	return c.srv.endSession(c, coord.ErrClosed)
}

// prepare checks op against the current tree, as ZooKeeper does, and
// resolves it into the change to journal (nil for a check).
func (c *session) prepare(op coord.Op) (*txnOp, error) {
	t := c.srv.tree
	if op.Type == coord.OpCreate || op.Type == coord.OpSet {
		// ZooKeeper's limit on a znode's data (jute.maxbuffer), kept here too.
		if err := coord.CheckWriteSize(op, 0); err != nil {
			return nil, err
		}
	}
	switch op.Type {
	case coord.OpCreate:
		if !op.Mode.Valid() {
			return nil, fmt.Errorf("create %s: invalid mode %v", op.Path, op.Mode)
		}
		if err := coord.ValidatePath(op.Path, op.Mode.IsSequential()); err != nil {
			return nil, err
		}
		if op.Path == "/" && !op.Mode.IsSequential() {
			return nil, fmt.Errorf("create %s: %w", op.Path, coord.ErrNodeExists)
		}
		parent, ok := t.nodes[coord.Parent(op.Path)]
		if !ok {
			return nil, fmt.Errorf("create %s: parent: %w", op.Path, coord.ErrNoNode)
		}
		path := op.Path
		if op.Mode.IsSequential() {
			path += coord.SequenceSuffix(parent.stat.Cversion)
		}
		if _, ok := t.nodes[path]; ok {
			return nil, fmt.Errorf("create %s: %w", path, coord.ErrNodeExists)
		}
		if parent.stat.EphemeralOwner != 0 {
			return nil, fmt.Errorf("create %s: %w", path, coord.ErrNoChildrenForEphemerals)
		}
		res := &txnOp{Type: txnCreate, Path: path, Data: append([]byte(nil), op.Data...)}
		if op.Mode.IsEphemeral() {
			res.Owner = c.id
		}
		return res, nil
	case coord.OpSet, coord.OpDelete, coord.OpCheck:
		if err := coord.ValidatePath(op.Path, false); err != nil {
			return nil, err
		}
		if op.Type == coord.OpDelete && op.Path == "/" {
			return nil, fmt.Errorf("delete /: %w", coord.ErrInvalidPath)
		}
		n, ok := t.nodes[op.Path]
		if !ok {
			return nil, fmt.Errorf("%s %s: %w", op.Type, op.Path, coord.ErrNoNode)
		}
		if op.Version != coord.AnyVersion && op.Version != n.stat.Version {
			return nil, fmt.Errorf("%s %s: version %d, want %d: %w", op.Type, op.Path, n.stat.Version, op.Version, coord.ErrBadVersion)
		}
		switch op.Type {
		case coord.OpSet:
			return &txnOp{Type: txnSet, Path: op.Path, Data: append([]byte(nil), op.Data...)}, nil
		case coord.OpDelete:
			if len(n.children) > 0 {
				return nil, fmt.Errorf("delete %s: %w", op.Path, coord.ErrNotEmpty)
			}
			return &txnOp{Type: txnDelete, Path: op.Path}, nil
		}
		return nil, nil
	}
	return nil, fmt.Errorf("unknown op type %v", op.Type)
}

// do prepares and commits a single op and delivers its watch events.
func (c *session) do(op coord.Op) (*txnOp, error) {
	res, err := c.prepare(op)
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, nil
	}
	events, err := c.srv.commit([]txnOp{*res})
	if err != nil {
		return nil, err
	}
	c.srv.deliver(events)
	return res, nil
}

func (c *session) Create(ctx context.Context, path string, data []byte, mode coord.CreateMode) (string, error) {
	if err := c.lock(ctx); err != nil {
		return "", err
	}
	defer c.srv.mu.Unlock()
	res, err := c.do(coord.CreateOp(path, data, mode))
	if err != nil {
		return "", err
	}
	return res.Path, nil
}

func (c *session) CreateAll(ctx context.Context, path string, data []byte, mode coord.CreateMode) (string, error) {
	if err := c.lock(ctx); err != nil {
		return "", err
	}
	defer c.srv.mu.Unlock()
	if err := coord.ValidatePath(path, mode.IsSequential()); err != nil {
		return "", err
	}
	var missing []string
	for p := coord.Parent(path); p != "/"; p = coord.Parent(p) {
		if _, ok := c.srv.tree.nodes[p]; ok {
			break
		}
		missing = append(missing, p)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if _, err := c.do(coord.CreateOp(missing[i], nil, coord.Persistent)); err != nil {
			return "", err
		}
	}
	res, err := c.do(coord.CreateOp(path, data, mode))
	if err != nil {
		return "", err
	}
	return res.Path, nil
}

func (c *session) Get(ctx context.Context, path string) ([]byte, coord.Stat, error) {
	data, st, _, err := c.get(ctx, path, false)
	return data, st, err
}

func (c *session) GetW(ctx context.Context, path string) ([]byte, coord.Stat, <-chan coord.Event, error) {
	return c.get(ctx, path, true)
}

func (c *session) get(ctx context.Context, path string, watch bool) ([]byte, coord.Stat, <-chan coord.Event, error) {
	if err := coord.ValidatePath(path, false); err != nil {
		return nil, coord.Stat{}, nil, err
	}
	if err := c.lock(ctx); err != nil {
		return nil, coord.Stat{}, nil, err
	}
	defer c.srv.mu.Unlock()
	n, ok := c.srv.tree.nodes[path]
	if !ok {
		return nil, coord.Stat{}, nil, fmt.Errorf("get %s: %w", path, coord.ErrNoNode)
	}
	var ch <-chan coord.Event
	if watch {
		ch = c.srv.addWatch(c, tableData, path)
	}
	return append([]byte{}, n.data...), n.statCopy(), ch, nil
}

func (c *session) Exists(ctx context.Context, path string) (bool, coord.Stat, error) {
	ok, st, _, err := c.exists(ctx, path, false)
	return ok, st, err
}

func (c *session) ExistsW(ctx context.Context, path string) (bool, coord.Stat, <-chan coord.Event, error) {
	return c.exists(ctx, path, true)
}

func (c *session) exists(ctx context.Context, path string, watch bool) (bool, coord.Stat, <-chan coord.Event, error) {
	if err := coord.ValidatePath(path, false); err != nil {
		return false, coord.Stat{}, nil, err
	}
	if err := c.lock(ctx); err != nil {
		return false, coord.Stat{}, nil, err
	}
	defer c.srv.mu.Unlock()
	var ch <-chan coord.Event
	if watch {
		ch = c.srv.addWatch(c, tableData, path)
	}
	n, ok := c.srv.tree.nodes[path]
	if !ok {
		return false, coord.Stat{}, ch, nil
	}
	return true, n.statCopy(), ch, nil
}

func (c *session) Children(ctx context.Context, path string) ([]string, coord.Stat, error) {
	kids, st, _, err := c.children(ctx, path, false)
	return kids, st, err
}

func (c *session) ChildrenW(ctx context.Context, path string) ([]string, coord.Stat, <-chan coord.Event, error) {
	return c.children(ctx, path, true)
}

func (c *session) children(ctx context.Context, path string, watch bool) ([]string, coord.Stat, <-chan coord.Event, error) {
	if err := coord.ValidatePath(path, false); err != nil {
		return nil, coord.Stat{}, nil, err
	}
	if err := c.lock(ctx); err != nil {
		return nil, coord.Stat{}, nil, err
	}
	defer c.srv.mu.Unlock()
	n, ok := c.srv.tree.nodes[path]
	if !ok {
		return nil, coord.Stat{}, nil, fmt.Errorf("children %s: %w", path, coord.ErrNoNode)
	}
	var ch <-chan coord.Event
	if watch {
		ch = c.srv.addWatch(c, tableChild, path)
	}
	return c.srv.tree.sortedChildren(n), n.statCopy(), ch, nil
}

func (c *session) Set(ctx context.Context, path string, data []byte, version int32) (coord.Stat, error) {
	if err := c.lock(ctx); err != nil {
		return coord.Stat{}, err
	}
	defer c.srv.mu.Unlock()
	if _, err := c.do(coord.SetOp(path, data, version)); err != nil {
		return coord.Stat{}, err
	}
	return c.srv.tree.nodes[path].statCopy(), nil
}

func (c *session) Delete(ctx context.Context, path string, version int32) error {
	if err := c.lock(ctx); err != nil {
		return err
	}
	defer c.srv.mu.Unlock()
	_, err := c.do(coord.DeleteOp(path, version))
	return err
}

// DeleteAll removes the subtree in one transaction, so unlike ZooKeeper's
// client-side recursion it is atomic here.
func (c *session) DeleteAll(ctx context.Context, path string) error {
	if err := coord.ValidatePath(path, false); err != nil {
		return err
	}
	if path == "/" {
		return fmt.Errorf("delete all of /: %w", coord.ErrInvalidPath)
	}
	if err := c.lock(ctx); err != nil {
		return err
	}
	defer c.srv.mu.Unlock()
	t := c.srv.tree
	if _, ok := t.nodes[path]; !ok {
		return nil
	}
	var ops []txnOp
	var walk func(p string)
	walk = func(p string) {
		for _, kid := range t.sortedChildren(t.nodes[p]) {
			walk(coord.Join(p, kid))
		}
		ops = append(ops, txnOp{Type: txnDelete, Path: p})
	}
	walk(path)
	events, err := c.srv.commit(ops)
	if err != nil {
		return err
	}
	c.srv.deliver(events)
	return nil
}

// Multi checks each op against the tree as changed by the ops before it,
// then commits all of them as one transaction.
func (c *session) Multi(ctx context.Context, ops ...coord.Op) error {
	// The same limit as a ZooKeeper server's, so code that works here works there.
	if err := coord.CheckMultiSize(ops, 0); err != nil {
		return err
	}
	if err := c.lock(ctx); err != nil {
		return err
	}
	defer c.srv.mu.Unlock()
	t := c.srv.tree
	var resolved []txnOp
	var undos []func()
	rollback := func() {
		for i := len(undos) - 1; i >= 0; i-- {
			undos[i]()
		}
	}
	for i, op := range ops {
		res, err := c.prepare(op)
		if err != nil {
			rollback()
			return &coord.MultiError{Index: i, Op: op, Err: err}
		}
		if res == nil {
			continue
		}
		undo, err := t.apply(*res, t.zxid+1, 0)
		if err != nil {
			rollback()
			return &coord.MultiError{Index: i, Op: op, Err: err}
		}
		undos = append(undos, undo)
		resolved = append(resolved, *res)
	}
	rollback()
	if len(resolved) == 0 {
		return nil
	}
	events, err := c.srv.commit(resolved)
	if err != nil {
		return err
	}
	c.srv.deliver(events)
	return nil
}
