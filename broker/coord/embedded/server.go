package embedded

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/ktoolhq/ktool/broker/coord"
)

// Server is the embedded coordination tree. Every method is safe for
// concurrent use; one mutex orders all changes, which is plenty for the
// coordination traffic of a few brokers.
type Server struct {
	mu       sync.Mutex
	disk     *disk
	tree     *tree
	sessions map[int64]*session
	nextID   int64
	closed   bool
	// failed is set when the journal could not be written: memory and disk
	// may then disagree, so the store refuses further changes.
	failed error

	dataWatches  map[string]map[*watch]struct{}
	childWatches map[string]map[*watch]struct{}

	now func() time.Time
}

// Open loads (or creates) the tree persisted in dir. Ephemeral nodes left by
// the previous run belonged to sessions that died with it, so they are
// deleted before Open returns.
func Open(dir string) (*Server, error) {
	d := &disk{dir: dir, compactBytes: defaultCompactBytes}
	t, err := d.load()
	if err != nil {
		d.close()
		return nil, fmt.Errorf("embedded coordination store %s: %w", dir, err)
	}
	s := &Server{
		disk:         d,
		tree:         t,
		sessions:     map[int64]*session{},
		dataWatches:  map[string]map[*watch]struct{}{},
		childWatches: map[string]map[*watch]struct{}{},
		now:          time.Now,
	}
	// Session ids are seeded from the clock like ZooKeeper's, so ids of this
	// run do not repeat those of an earlier one.
	s.nextID = int64(uint64(time.Now().UnixMilli())<<24>>8) + 1
	s.mu.Lock()
	defer s.mu.Unlock()
	if stale := t.ephemerals(0); len(stale) > 0 {
		ops := make([]txnOp, 0, len(stale))
		for _, p := range stale {
			ops = append(ops, txnOp{Type: txnDelete, Path: p})
		}
		if _, err := s.commit(ops); err != nil {
			d.close()
			return nil, fmt.Errorf("embedded coordination store %s: remove stale ephemerals: %w", dir, err)
		}
	}
	return s, nil
}

// Connect opens a new session; it implements coord.Connector.
func (s *Server) Connect(ctx context.Context) (coord.Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, coord.ErrClosed
	}
	id := s.nextID
	s.nextID++
	sess := &session{srv: s, id: id, expired: make(chan struct{}), watches: map[*watch]struct{}{}}
	s.sessions[id] = sess
	return sess, nil
}

// Sessions returns the ids of the live sessions, sorted.
func (s *Server) Sessions() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]int64, 0, len(s.sessions))
	for id := range s.sessions {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// Expire ends session id at once, as if it had timed out: its ephemeral
// nodes are deleted, its watches fire with coord.ErrSessionExpired and its
// Store's Expired channel closes. In-process clusters use it to simulate a
// broker that died.
func (s *Server) Expire(id int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[id]
	if !ok {
		return fmt.Errorf("expire session 0x%x: no such live session", id)
	}
	return s.endSession(sess, coord.ErrSessionExpired)
}

// LastZxid returns the zxid of the latest change.
func (s *Server) LastZxid() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tree.zxid
}

// Close stops the server: every pending watch fires with coord.ErrClosed and
// every session's calls fail with coord.ErrClosed. Ephemeral nodes stay on
// disk until the next Open removes them, as their sessions cannot outlive the
// process.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for _, sess := range s.sessions {
		sess.ended = coord.ErrClosed
		sess.fireAll(coord.ErrClosed)
	}
	s.sessions = map[int64]*session{}
	s.dataWatches = map[string]map[*watch]struct{}{}
	s.childWatches = map[string]map[*watch]struct{}{}
	return s.disk.close()
}

// endSession removes sess: its watches fire with why, its ephemerals are
// deleted in one transaction (firing other sessions' watches), and an
// expiry closes its Expired channel.
func (s *Server) endSession(sess *session, why error) error {
	delete(s.sessions, sess.id)
	sess.ended = why
	for w := range sess.watches {
		s.removeWatch(w)
	}
	sess.fireAll(why)
	if why == coord.ErrSessionExpired {
		close(sess.expired)
	}
	paths := s.tree.ephemerals(sess.id)
	if len(paths) == 0 {
		return nil
	}
	ops := make([]txnOp, 0, len(paths))
	for _, p := range paths {
		ops = append(ops, txnOp{Type: txnDelete, Path: p})
	}
	events, err := s.commit(ops)
	if err != nil {
		return err
	}
	s.deliver(events)
	return nil
}

// usable says why sess cannot be used, if it cannot.
func (s *Server) usable(sess *session) error {
	switch {
	case s.closed:
		return coord.ErrClosed
	case sess.ended != nil:
		return sess.ended
	case s.failed != nil:
		return s.failed
	}
	return nil
}

// commit applies resolved ops to the tree, journals them as one transaction
// and compacts the journal when it grew large. It returns the watch events
// to deliver; on error nothing changed in memory.
func (s *Server) commit(ops []txnOp) ([]pendingEvent, error) {
	if s.failed != nil {
		return nil, s.failed
	}
	tx := txn{Zxid: s.tree.zxid + 1, Time: s.now().UnixMilli(), Ops: ops}
	undos := make([]func(), 0, len(ops))
	rollback := func() {
		for i := len(undos) - 1; i >= 0; i-- {
			undos[i]()
		}
	}
	for _, op := range ops {
		undo, err := s.tree.apply(op, tx.Zxid, tx.Time)
		if err != nil {
			rollback()
			return nil, err
		}
		undos = append(undos, undo)
	}
	if err := s.disk.append(tx); err != nil {
		rollback()
		s.failed = fmt.Errorf("embedded coordination store failed: %w", err)
		return nil, s.failed
	}
	s.tree.zxid = tx.Zxid
	if s.disk.needsCompaction() {
		if err := s.disk.compact(s.tree); err != nil {
			s.failed = fmt.Errorf("embedded coordination store failed: compact: %w", err)
		}
	}
	events := make([]pendingEvent, 0, 2*len(ops))
	for _, op := range ops {
		parent := coord.Parent(op.Path)
		switch op.Type {
		case txnCreate:
			events = append(events,
				pendingEvent{table: tableData, path: op.Path, typ: coord.NodeCreated},
				pendingEvent{table: tableChild, path: parent, typ: coord.NodeChildrenChanged})
		case txnSet:
			events = append(events, pendingEvent{table: tableData, path: op.Path, typ: coord.NodeDataChanged})
		case txnDelete:
			events = append(events,
				pendingEvent{table: tableData, path: op.Path, typ: coord.NodeDeleted},
				pendingEvent{table: tableChild, path: op.Path, typ: coord.NodeDeleted},
				pendingEvent{table: tableChild, path: parent, typ: coord.NodeChildrenChanged})
		}
	}
	return events, nil
}
