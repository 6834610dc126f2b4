package embedded

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ktoolhq/ktool/broker/coord"
)

// node is one znode; stat's DataLength and NumChildren are derived on read.
type node struct {
	data     []byte
	stat     coord.Stat
	children map[string]struct{}
}

func (n *node) statCopy() coord.Stat {
	st := n.stat
	st.DataLength = int32(len(n.data))
	st.NumChildren = int32(len(n.children))
	return st
}

// tree is the znode tree keyed by absolute path, plus the last zxid applied.
type tree struct {
	nodes map[string]*node
	zxid  int64
}

func newTree() *tree {
	return &tree{nodes: map[string]*node{"/": {children: map[string]struct{}{}}}}
}

// txnOpType is a change recorded in the journal. A Multi and a session's
// ephemeral cleanup are one transaction each, so they persist atomically.
type txnOpType string

const (
	txnCreate txnOpType = "create"
	txnSet    txnOpType = "set"
	txnDelete txnOpType = "delete"
)

// txnOp is one resolved change: sequential names are already final, so
// replaying a transaction needs no decisions.
type txnOp struct {
	Type  txnOpType `json:"type"`
	Path  string    `json:"path"`
	Data  []byte    `json:"data,omitempty"`
	Owner int64     `json:"owner,omitempty"`
}

// txn is the unit of the journal: every change bumps the zxid, including
// changes to ephemeral nodes, so zxids stay monotonic across restarts.
type txn struct {
	Zxid int64   `json:"zxid"`
	Time int64   `json:"time"`
	Ops  []txnOp `json:"ops"`
}

// apply performs op at zxid/ms on a tree whose consistency the caller has
// checked, and returns how to take it back.
func (t *tree) apply(op txnOp, zxid int64, ms int64) (undo func(), err error) {
	parentPath := coord.Parent(op.Path)
	name := baseName(op.Path)
	switch op.Type {
	case txnCreate:
		parent, ok := t.nodes[parentPath]
		if !ok {
			return nil, fmt.Errorf("create %s: parent missing", op.Path)
		}
		if _, ok := t.nodes[op.Path]; ok {
			return nil, fmt.Errorf("create %s: exists", op.Path)
		}
		prevParent := parent.stat
		now := time.UnixMilli(ms)
		t.nodes[op.Path] = &node{
			data: op.Data,
			stat: coord.Stat{
				Czxid: zxid, Mzxid: zxid, Pzxid: zxid, Ctime: now, Mtime: now,
				EphemeralOwner: op.Owner,
			},
			children: map[string]struct{}{},
		}
		parent.children[name] = struct{}{}
		parent.stat.Cversion++
		parent.stat.Pzxid = zxid
		return func() {
			delete(t.nodes, op.Path)
			delete(parent.children, name)
			parent.stat = prevParent
		}, nil
	case txnSet:
		n, ok := t.nodes[op.Path]
		if !ok {
			return nil, fmt.Errorf("set %s: missing", op.Path)
		}
		prevData, prevStat := n.data, n.stat
		n.data = op.Data
		n.stat.Version++
		n.stat.Mzxid = zxid
		n.stat.Mtime = time.UnixMilli(ms)
		return func() { n.data, n.stat = prevData, prevStat }, nil
	case txnDelete:
		n, ok := t.nodes[op.Path]
		if !ok || op.Path == "/" {
			return nil, fmt.Errorf("delete %s: missing", op.Path)
		}
		if len(n.children) > 0 {
			return nil, fmt.Errorf("delete %s: has children", op.Path)
		}
		parent := t.nodes[parentPath]
		prevParent := parent.stat
		delete(t.nodes, op.Path)
		delete(parent.children, name)
		parent.stat.Cversion++
		parent.stat.Pzxid = zxid
		return func() {
			t.nodes[op.Path] = n
			parent.children[name] = struct{}{}
			parent.stat = prevParent
		}, nil
	}
	return nil, fmt.Errorf("unknown transaction op %q", op.Type)
}

// applyTxn applies all of tx or nothing.
func (t *tree) applyTxn(tx txn) error {
	undos := make([]func(), 0, len(tx.Ops))
	for _, op := range tx.Ops {
		undo, err := t.apply(op, tx.Zxid, tx.Time)
		if err != nil {
			for i := len(undos) - 1; i >= 0; i-- {
				undos[i]()
			}
			return err
		}
		undos = append(undos, undo)
	}
	t.zxid = tx.Zxid
	return nil
}

func (t *tree) sortedChildren(n *node) []string {
	out := make([]string, 0, len(n.children))
	for c := range n.children {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// ephemerals returns the paths of nodes owned by owner (any owner when
// owner is 0), deepest first.
func (t *tree) ephemerals(owner int64) []string {
	var out []string
	for p, n := range t.nodes {
		if n.stat.EphemeralOwner != 0 && (owner == 0 || n.stat.EphemeralOwner == owner) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] > out[j] })
	return out
}

func baseName(path string) string { return path[strings.LastIndexByte(path, '/')+1:] }
