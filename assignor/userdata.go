package assignor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// stickyUserData encodes Kafka's StickyAssignorUserData: the member's
// current assignment and, when known, its generation (version 1; version 0
// has no generation). Topics and partitions are sorted (KAFKA-12898) so the
// same ownership always gives the same bytes and joins cause no needless
// rebalance.
func stickyUserData(owned map[string][]int32, generation int32) []byte {
	meta := kmsg.NewStickyMemberMetadata()
	meta.Generation = generation
	for _, topic := range sortedTopics(owned) {
		ca := kmsg.NewStickyMemberMetadataCurrentAssignment()
		ca.Topic = topic
		ca.Partitions = slices.Clone(owned[topic])
		slices.Sort(ca.Partitions)
		meta.CurrentAssignment = append(meta.CurrentAssignment, ca)
	}
	return meta.AppendTo(nil)
}

// cooperativeUserData encodes Kafka's CooperativeStickyAssignor user data:
// the generation alone, since the owned partitions travel in the
// subscription itself.
func cooperativeUserData(generation int32) []byte {
	return binary.BigEndian.AppendUint32(nil, uint32(generation))
}

var errShortUserData = errors.New("sticky user data is truncated")

// DecodeStickyUserData decodes Kafka's StickyAssignorUserData (version 0 or
// 1) into the partitions a member owned and the generation they come from
// (-1 for version 0). Every length is checked against the input, so hostile
// bytes give an error, never a huge allocation.
func DecodeStickyUserData(b []byte) (owned map[string][]int32, generation int32, err error) {
	r := reader{b: b}
	n := r.arrayLen(6) // a topic is at least a string length and an array length
	owned = make(map[string][]int32, n)
	for range n {
		topic := r.str()
		np := r.arrayLen(4)
		parts := make([]int32, 0, np)
		for range np {
			parts = append(parts, r.int32())
		}
		if r.err != nil {
			break
		}
		if _, dup := owned[topic]; dup {
			return nil, -1, fmt.Errorf("sticky user data lists topic %q twice", topic)
		}
		owned[topic] = parts
	}
	generation = -1
	if r.err == nil && len(r.b) > 0 {
		generation = r.int32()
	}
	if r.err != nil {
		return nil, -1, r.err
	}
	if len(r.b) > 0 {
		return nil, -1, fmt.Errorf("sticky user data has %d trailing bytes", len(r.b))
	}
	return owned, generation, nil
}

// reader reads Kafka's classic (non-flexible) encoding; the first error
// sticks and later reads return zero values.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = errShortUserData
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) int32() int32 {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

// arrayLen reads an array length (-1, null, counts as empty) and rejects one
// that could not fit in what is left given each element's minimum size.
func (r *reader) arrayLen(minElem int) int {
	n := int(r.int32())
	if r.err != nil || n <= 0 {
		return 0
	}
	if n > len(r.b)/minElem {
		r.err = errShortUserData
		return 0
	}
	return n
}

func (r *reader) str() string {
	b := r.take(2)
	if b == nil {
		return ""
	}
	return string(r.take(int(int16(binary.BigEndian.Uint16(b)))))
}

// sortedTopics returns the keys of m in Java String order.
func sortedTopics[V any](m map[string]V) []string {
	topics := make([]string, 0, len(m))
	for t := range m {
		topics = append(topics, t)
	}
	slices.SortFunc(topics, javaCompare)
	return topics
}
