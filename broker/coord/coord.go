package coord

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Stat is a znode's metadata, with ZooKeeper's meaning for every field. The
// czxid of a broker's registration znode is its broker epoch.
type Stat struct {
	Czxid          int64
	Mzxid          int64
	Pzxid          int64
	Ctime          time.Time
	Mtime          time.Time
	Version        int32
	Cversion       int32
	EphemeralOwner int64
	DataLength     int32
	NumChildren    int32
}

// CreateMode says whether a created znode outlives its session and whether
// its name gets a sequence suffix.
type CreateMode int

// Create modes, as in ZooKeeper.
const (
	Persistent CreateMode = iota
	Ephemeral
	PersistentSequential
	EphemeralSequential
)

// IsEphemeral reports whether nodes created with m die with their session.
func (m CreateMode) IsEphemeral() bool { return m == Ephemeral || m == EphemeralSequential }

// IsSequential reports whether nodes created with m get a sequence suffix.
func (m CreateMode) IsSequential() bool {
	return m == PersistentSequential || m == EphemeralSequential
}

// Valid reports whether m is one of the defined modes.
func (m CreateMode) Valid() bool { return m >= Persistent && m <= EphemeralSequential }

func (m CreateMode) String() string {
	switch m {
	case Persistent:
		return "persistent"
	case Ephemeral:
		return "ephemeral"
	case PersistentSequential:
		return "persistent_sequential"
	case EphemeralSequential:
		return "ephemeral_sequential"
	}
	return fmt.Sprintf("CreateMode(%d)", int(m))
}

// EventType is what a watch reports.
type EventType int

// Watch event types, as in ZooKeeper. EventNone is carried by events whose
// Err says the watch died with its session or store.
const (
	EventNone EventType = iota
	NodeCreated
	NodeDeleted
	NodeDataChanged
	NodeChildrenChanged
)

func (t EventType) String() string {
	switch t {
	case EventNone:
		return "none"
	case NodeCreated:
		return "node_created"
	case NodeDeleted:
		return "node_deleted"
	case NodeDataChanged:
		return "node_data_changed"
	case NodeChildrenChanged:
		return "node_children_changed"
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// Event is delivered once on a watch channel, which is then closed. When the
// session expires or the store closes before the watch triggers, the event
// has Type EventNone and Err set (ErrSessionExpired, ErrClosed or
// ErrConnectionLoss), so a goroutine waiting on a watch never hangs.
type Event struct {
	Type EventType
	Path string
	Err  error
}

// Errors shared by every Store; implementations wrap or return them so
// callers test with errors.Is.
var (
	ErrNoNode                  = errors.New("coord: node does not exist")
	ErrNodeExists              = errors.New("coord: node already exists")
	ErrBadVersion              = errors.New("coord: version conflict")
	ErrNotEmpty                = errors.New("coord: node has children")
	ErrNoChildrenForEphemerals = errors.New("coord: ephemeral nodes may not have children")
	ErrInvalidPath             = errors.New("coord: invalid path")
	ErrSessionExpired          = errors.New("coord: session expired")
	ErrConnectionLoss          = errors.New("coord: connection lost")
	ErrClosed                  = errors.New("coord: store closed")
)

// OpType is the kind of one operation inside Multi.
type OpType int

// Operation kinds for Multi.
const (
	OpCreate OpType = iota + 1
	OpSet
	OpDelete
	OpCheck
)

func (t OpType) String() string {
	switch t {
	case OpCreate:
		return "create"
	case OpSet:
		return "set"
	case OpDelete:
		return "delete"
	case OpCheck:
		return "check"
	}
	return fmt.Sprintf("OpType(%d)", int(t))
}

// Op is one operation of a Multi; build it with CreateOp, SetOp, DeleteOp or
// CheckOp.
type Op struct {
	Type    OpType
	Path    string
	Data    []byte
	Mode    CreateMode
	Version int32
}

// CreateOp creates path with data in mode.
func CreateOp(path string, data []byte, mode CreateMode) Op {
	return Op{Type: OpCreate, Path: path, Data: data, Mode: mode}
}

// SetOp sets path's data if its version is version (-1: any).
func SetOp(path string, data []byte, version int32) Op {
	return Op{Type: OpSet, Path: path, Data: data, Version: version}
}

// DeleteOp deletes path if its version is version (-1: any).
func DeleteOp(path string, version int32) Op {
	return Op{Type: OpDelete, Path: path, Version: version}
}

// CheckOp fails the Multi unless path exists with version (-1: any).
func CheckOp(path string, version int32) Op {
	return Op{Type: OpCheck, Path: path, Version: version}
}

// MultiError says which operation made a Multi fail; nothing was applied.
// It unwraps to the operation's error (ErrBadVersion, ErrNoNode ...).
type MultiError struct {
	Index int
	Op    Op
	Err   error
}

func (e *MultiError) Error() string {
	return fmt.Sprintf("multi op %d (%s %s): %v", e.Index, e.Op.Type, e.Op.Path, e.Err)
}

func (e *MultiError) Unwrap() error { return e.Err }

// AnyVersion matches every version in Set, Delete and CheckOp.
const AnyVersion int32 = -1

// Store is one client session on the coordination tree. Ephemeral nodes
// belong to the session and vanish when it expires or is closed. Paths are
// absolute ("/brokers/ids/1"). Watches are one-shot, like ZooKeeper's: each
// returned channel receives exactly one Event and is then closed.
type Store interface {
	// Create makes path and returns its name (with the sequence suffix for
	// sequential modes). A missing parent is ErrNoNode.
	Create(ctx context.Context, path string, data []byte, mode CreateMode) (string, error)
	// CreateAll is Create after making missing parents (persistent, empty).
	CreateAll(ctx context.Context, path string, data []byte, mode CreateMode) (string, error)
	Get(ctx context.Context, path string) ([]byte, Stat, error)
	// GetW is Get plus a watch firing on the next data change or deletion.
	GetW(ctx context.Context, path string) ([]byte, Stat, <-chan Event, error)
	Exists(ctx context.Context, path string) (bool, Stat, error)
	// ExistsW is Exists plus a watch firing on creation, data change or
	// deletion of path.
	ExistsW(ctx context.Context, path string) (bool, Stat, <-chan Event, error)
	// Children returns the sorted child names of path.
	Children(ctx context.Context, path string) ([]string, Stat, error)
	// ChildrenW is Children plus a watch firing when a child is created or
	// deleted, or path itself is deleted.
	ChildrenW(ctx context.Context, path string) ([]string, Stat, <-chan Event, error)
	// Set replaces path's data if its version is version (AnyVersion: any).
	Set(ctx context.Context, path string, data []byte, version int32) (Stat, error)
	// Delete removes path if its version is version (AnyVersion: any); a node
	// with children is ErrNotEmpty.
	Delete(ctx context.Context, path string, version int32) error
	// DeleteAll removes path and everything below it; a missing path is not
	// an error.
	DeleteAll(ctx context.Context, path string) error
	// Multi applies all ops or none; a failure is a *MultiError.
	Multi(ctx context.Context, ops ...Op) error
	// SessionID identifies the session (the EphemeralOwner of its nodes).
	SessionID() int64
	// Expired is closed when the session has expired: its ephemerals are
	// gone and its watches fired with ErrSessionExpired. The owner then asks
	// its Connector for a fresh session and registers again.
	Expired() <-chan struct{}
	// Close ends the session: its ephemerals are deleted and pending watches
	// fire with ErrClosed. Expired is not closed by Close.
	Close() error
}

// Connector makes new sessions; the broker holds one and reconnects after
// its session expired.
type Connector interface {
	Connect(ctx context.Context) (Store, error)
}

// ValidatePath checks a znode path with ZooKeeper's rules: absolute, no empty,
// "." or ".." components, no trailing slash except for the root, no NUL. A
// sequential create may end in "/", since the suffix completes the name.
func ValidatePath(path string, sequential bool) error {
	if path == "" {
		return fmt.Errorf("%w: empty path", ErrInvalidPath)
	}
	if path[0] != '/' {
		return fmt.Errorf("%w: %q is not absolute", ErrInvalidPath, path)
	}
	if path == "/" {
		return nil
	}
	if strings.ContainsRune(path, 0) {
		return fmt.Errorf("%w: %q contains NUL", ErrInvalidPath, path)
	}
	trimmed := path[1:]
	if sequential && strings.HasSuffix(trimmed, "/") {
		trimmed = strings.TrimSuffix(trimmed, "/")
		if trimmed == "" {
			return nil
		}
	}
	for _, part := range strings.Split(trimmed, "/") {
		switch part {
		case "":
			return fmt.Errorf("%w: %q has an empty component", ErrInvalidPath, path)
		case ".", "..":
			return fmt.Errorf("%w: %q has a relative component", ErrInvalidPath, path)
		}
	}
	return nil
}

// Parent returns the parent of an absolute path ("/" for top-level nodes).
func Parent(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/"
	}
	return path[:i]
}

// Join appends name to the absolute path dir.
func Join(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// SequenceSuffix formats a sequence number the way ZooKeeper appends it to
// sequential node names: ten digits, zero padded.
func SequenceSuffix(seq int32) string { return fmt.Sprintf("%010d", seq) }
