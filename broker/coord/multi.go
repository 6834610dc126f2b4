package coord

import (
	"errors"
	"fmt"
)

// Sizes of a Multi. ZooKeeper reads no request larger than jute.maxbuffer
// (0xfffff bytes by default): a bigger one makes the server drop the
// connection, failing every request in flight on it. So a Store refuses a
// Multi above MaxRequestBytes before sending it, and a caller with many
// writes splits them with SplitMulti, one transaction (one fsync of the
// ZooKeeper log or the embedded journal) per part.

// MaxRequestBytes is ZooKeeper's default jute.maxbuffer: the largest request
// payload (after the 4-byte length) a server accepts.
const MaxRequestBytes = 0xfffff

// MultiBatchBytes is the size a caller's parts aim at: half the limit, which
// leaves room for a chroot prefix on every path.
const MultiBatchBytes = MaxRequestBytes / 2

// ErrRequestTooLarge is a Multi whose encoded request exceeds MaxRequestBytes.
var ErrRequestTooLarge = errors.New("coord: request larger than jute.maxbuffer")

// The jute encoding of a multi request: each op is a header (type int32, done
// bool, err int32) and its request; a final header ends the list. Strings
// and byte arrays carry a 4-byte length; the ACL Kafka writes without
// zookeeper.set.acl is one entry (perms, "world", "anyone").
const (
	multiHeaderBytes  = 4 + 1 + 4
	requestHeaderSize = 4 + 4 // xid, opcode
	openACLBytes      = 4 + 4 + (4 + len("world")) + (4 + len("anyone"))
)

// OpBytes is the size of op inside a multi request when every path carries a
// prefix of prefixLen bytes (a chroot).
func OpBytes(op Op, prefixLen int) int {
	n := multiHeaderBytes + 4 + prefixLen + len(op.Path)
	switch op.Type {
	case OpCreate:
		n += 4 + len(op.Data) + openACLBytes + 4 // data, acl, flags
	case OpSet:
		n += 4 + len(op.Data) + 4 // data, version
	default:
		n += 4 // version
	}
	return n
}

// MultiBytes is the size of the request payload of Multi(ops...).
func MultiBytes(ops []Op, prefixLen int) int {
	n := requestHeaderSize + multiHeaderBytes
	for _, op := range ops {
		n += OpBytes(op, prefixLen)
	}
	return n
}

// CheckMultiSize refuses a Multi too large for a ZooKeeper server.
func CheckMultiSize(ops []Op, prefixLen int) error {
	if n := MultiBytes(ops, prefixLen); n > MaxRequestBytes {
		return fmt.Errorf("%w: multi of %d ops is %d bytes, the limit is %d", ErrRequestTooLarge, len(ops), n, MaxRequestBytes)
	}
	return nil
}

// CheckWriteSize refuses a single create or set of data at path too large
// for a ZooKeeper server (the znode data limit is the same jute.maxbuffer).
func CheckWriteSize(op Op, prefixLen int) error {
	if n := requestHeaderSize + OpBytes(op, prefixLen) - multiHeaderBytes; n > MaxRequestBytes {
		return fmt.Errorf("%w: %s %s is %d bytes, the limit is %d", ErrRequestTooLarge, op.Type, op.Path, n, MaxRequestBytes)
	}
	return nil
}

// Span is ops[Start:End] of a split.
type Span struct{ Start, End int }

// SplitMulti cuts groups of ops into consecutive spans whose Multi, with the
// fence ops in front of each, stays within limit bytes (prefixLen counted
// on every path). groups[i] is the number of ops of the i-th group, which
// must stay in one Multi (a znode and its parent, say); a group too large on
// its own gets a span to itself, which the Store then refuses.
func SplitMulti(fence []Op, ops []Op, groups []int, limit, prefixLen int) []Span {
	base := MultiBytes(fence, prefixLen)
	var out []Span
	start, at, size := 0, 0, base
	for _, g := range groups {
		gs := 0
		for _, op := range ops[at : at+g] {
			gs += OpBytes(op, prefixLen)
		}
		if at > start && size+gs > limit {
			out = append(out, Span{start, at})
			start, size = at, base
		}
		size += gs
		at += g
	}
	if at > start {
		out = append(out, Span{start, at})
	}
	return out
}
