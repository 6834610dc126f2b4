package plugins

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/ktoolhq/ktool/assignor"
	"github.com/ktoolhq/ktool/plugins/codec"
)

// The gRPC messages are protobuf well-known types (BytesValue) carrying a
// compact binary encoding of the domain types, written here and nowhere else:
// unsigned varint lengths and counts, zig-zag varint integers, maps in
// sorted key order so the same value always encodes the same way.

type writer struct{ b []byte }

func (w *writer) uint(v uint64)  { w.b = binary.AppendUvarint(w.b, v) }
func (w *writer) int(v int64)    { w.b = binary.AppendVarint(w.b, v) }
func (w *writer) bytes(b []byte) { w.uint(uint64(len(b))); w.b = append(w.b, b...) }
func (w *writer) str(s string)   { w.uint(uint64(len(s))); w.b = append(w.b, s...) }

// nullableBytes keeps nil apart from empty, as Kafka user data does.
func (w *writer) nullableBytes(b []byte) {
	if b == nil {
		w.uint(0)
		return
	}
	w.uint(uint64(len(b)) + 1)
	w.b = append(w.b, b...)
}

func (w *writer) strs(ss []string) {
	w.uint(uint64(len(ss)))
	for _, s := range ss {
		w.str(s)
	}
}

func (w *writer) int32s(xs []int32) {
	w.uint(uint64(len(xs)))
	for _, x := range xs {
		w.int(int64(x))
	}
}

func (w *writer) partitions(m map[string][]int32) {
	keys := sortedKeys(m)
	w.uint(uint64(len(keys)))
	for _, k := range keys {
		w.str(k)
		w.int32s(m[k])
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

var errTruncated = errors.New("truncated")

// reader decodes what writer wrote; the first error sticks and later reads return zero values.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *reader) uint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(errTruncated)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) int() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail(errTruncated)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) int32() int32 {
	v := r.int()
	if int64(int32(v)) != v {
		r.fail(fmt.Errorf("value %d does not fit in int32", v))
		return 0
	}
	return int32(v)
}

// count reads a length or count, refusing one larger than the bytes left
// (each element takes at least one byte), so bad input cannot make us allocate.
func (r *reader) count() int {
	v := r.uint()
	if v > uint64(len(r.b)) {
		r.fail(errTruncated)
		return 0
	}
	return int(v)
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	b := r.b[:n:n]
	r.b = r.b[n:]
	return b
}

func (r *reader) bytes() []byte { return r.take(r.count()) }
func (r *reader) str() string   { return string(r.bytes()) }

func (r *reader) nullableBytes() []byte {
	v := r.uint()
	if v == 0 || r.err != nil {
		return nil
	}
	if v-1 > uint64(len(r.b)) {
		r.fail(errTruncated)
		return nil
	}
	return append([]byte{}, r.take(int(v-1))...)
}

func (r *reader) strs() []string {
	n := r.count()
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = r.str()
	}
	return out
}

func (r *reader) int32s() []int32 {
	n := r.count()
	out := make([]int32, n)
	for i := range out {
		out[i] = r.int32()
	}
	return out
}

func (r *reader) partitions() map[string][]int32 {
	n := r.count()
	if n == 0 {
		return nil
	}
	m := make(map[string][]int32, n)
	for range n {
		k := r.str()
		m[k] = r.int32s()
	}
	return m
}

// done reports the first error, or leftover bytes, naming what was decoded.
func (r *reader) done(what string) error {
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%d bytes left over", len(r.b))
	}
	if r.err != nil {
		return fmt.Errorf("decoding %s: %w", what, r.err)
	}
	return nil
}

func encodeSections(sections [][]byte) []byte {
	size := binary.MaxVarintLen64
	for _, s := range sections {
		size += len(s) + binary.MaxVarintLen64
	}
	w := writer{b: make([]byte, 0, size)}
	w.uint(uint64(len(sections)))
	for _, s := range sections {
		w.bytes(s)
	}
	return w.b
}

// encodeDecompressRequest is a Decompress call: the output limit per
// section, then the sections.
func encodeDecompressRequest(limit int, sections [][]byte) []byte {
	w := writer{}
	w.uint(uint64(limit))
	return append(w.b, encodeSections(sections)...)
}

// decodeDecompressRequest reads a Decompress call; the limit is clamped to
// what any codec may produce.
func decodeDecompressRequest(b []byte) ([][]byte, int, error) {
	r := reader{b: b}
	limit := r.uint()
	if r.err != nil {
		return nil, 0, fmt.Errorf("decoding decompress limit: %w", r.err)
	}
	secs, err := decodeSections(r.b)
	return secs, codec.Limit(int(min(limit, codec.MaxDecompressed))), err
}

func decodeSections(b []byte) ([][]byte, error) {
	r := reader{b: b}
	out := make([][]byte, r.count())
	for i := range out {
		out[i] = r.bytes()
	}
	return out, r.done("sections")
}

// wireInfo is what a plugin says about itself through its Info call.
type wireInfo struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	Version     string `json:"version"`
	CodecID     int8   `json:"codec_id,omitempty"`
	Cooperative bool   `json:"cooperative,omitempty"`
}

func encodeInfo(i wireInfo) ([]byte, error) { return json.Marshal(i) }

func decodeInfo(b []byte) (wireInfo, error) {
	var i wireInfo
	if err := json.Unmarshal(b, &i); err != nil {
		return i, fmt.Errorf("decoding plugin info: %w", err)
	}
	return i, nil
}

func encodeUserDataRequest(owned map[string][]int32, generation int32) []byte {
	var w writer
	w.partitions(owned)
	w.int(int64(generation))
	return w.b
}

func decodeUserDataRequest(b []byte) (map[string][]int32, int32, error) {
	r := reader{b: b}
	owned := r.partitions()
	gen := r.int32()
	return owned, gen, r.done("user data request")
}

// Member.Owned is nil when unknown and may be empty when known; the flag keeps them apart.
func encodeAssignRequest(members []assignor.Member, partitions map[string]int32) []byte {
	var w writer
	w.uint(uint64(len(members)))
	for _, m := range members {
		w.str(m.ID)
		w.str(m.InstanceID)
		w.strs(m.Topics)
		w.nullableBytes(m.UserData)
		if m.Owned == nil {
			w.uint(0)
		} else {
			w.uint(1)
			w.partitions(m.Owned)
		}
		w.int(int64(m.Generation))
	}
	topics := sortedKeys(partitions)
	w.uint(uint64(len(topics)))
	for _, t := range topics {
		w.str(t)
		w.int(int64(partitions[t]))
	}
	return w.b
}

func decodeAssignRequest(b []byte) ([]assignor.Member, map[string]int32, error) {
	r := reader{b: b}
	members := make([]assignor.Member, r.count())
	for i := range members {
		m := &members[i]
		m.ID = r.str()
		m.InstanceID = r.str()
		m.Topics = r.strs()
		m.UserData = r.nullableBytes()
		if r.uint() == 1 {
			m.Owned = r.partitions()
			if m.Owned == nil {
				m.Owned = map[string][]int32{}
			}
		}
		m.Generation = r.int32()
	}
	n := r.count()
	partitions := make(map[string]int32, n)
	for range n {
		t := r.str()
		partitions[t] = r.int32()
	}
	return members, partitions, r.done("assign request")
}

func encodeAssignment(a assignor.Assignment) []byte {
	var w writer
	members := sortedKeys(a)
	w.uint(uint64(len(members)))
	for _, m := range members {
		w.str(m)
		w.partitions(a[m])
	}
	return w.b
}

func decodeAssignment(b []byte) (assignor.Assignment, error) {
	r := reader{b: b}
	n := r.count()
	a := make(assignor.Assignment, n)
	for range n {
		m := r.str()
		ps := r.partitions()
		if ps == nil {
			ps = map[string][]int32{}
		}
		a[m] = ps
	}
	return a, r.done("assignment")
}
