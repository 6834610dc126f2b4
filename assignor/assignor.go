package assignor

import (
	"fmt"
	"slices"
	"unicode/utf8"
)

// Member is one group member as the group leader sees it after JoinGroup.
type Member struct {
	ID         string
	InstanceID string             // static membership (group.instance.id), "" if none
	Topics     []string           // subscription
	UserData   []byte             // the assignor's own user data from the member's metadata
	Owned      map[string][]int32 // owned partitions (ConsumerProtocol v1+), nil if unknown
	Generation int32              // generation the member's owned partitions come from, -1 if unknown
}

// Assignment maps member ID -> topic -> partitions (sorted ascending). Every
// member of the input has an entry, an empty map if it was given nothing;
// a topic a member gets no partition of is absent from its map.
type Assignment map[string]map[string][]int32

// Assignor decides which member of a consumer group consumes which partition.
type Assignor interface {
	// Name is the protocol name on the wire: "range", "roundrobin",
	// "sticky", "cooperative-sticky".
	Name() string
	// Cooperative reports incremental (cooperative) rebalancing.
	Cooperative() bool
	// UserData is what a member puts in its subscription's user data
	// (sticky's StickyAssignorUserData in Kafka's format; nil for
	// range/roundrobin).
	UserData(owned map[string][]int32, generation int32) []byte
	// Assign is deterministic: same input, same output, whatever the
	// member order.
	Assign(members []Member, partitions map[string]int32) (Assignment, error)
}

// Builtins returns the built-in assignors, Range first (the default).
func Builtins() []Assignor {
	return []Assignor{Range(), RoundRobin(), Sticky(), CooperativeSticky()}
}

// ByName returns the built-in assignor with the given protocol name.
func ByName(name string) (Assignor, bool) {
	for _, a := range Builtins() {
		if a.Name() == name {
			return a, true
		}
	}
	return nil, false
}

// MaxPartitions bounds the partitions one assignment covers, so that a
// corrupt partition count is an error rather than an allocation that takes
// the process down. Kafka clusters hold far fewer.
const MaxPartitions = 10_000_000

// group is the validated, ordered view of an Assign call shared by all
// assignors.
type group struct {
	members []*member // in Kafka's MemberInfo order
	// topics are the topics somebody subscribes to that have partitions,
	// in Java String order.
	topics []string
	counts map[string]int32
	// subscribers lists, per topic in topics, the indexes of the members
	// subscribed to it, in member order.
	subscribers map[string][]int
}

type member struct {
	*Member
	topics []string // deduplicated, Java String order
}

// newGroup validates the input and orders it the way Kafka's assignors do.
// Topics that nobody subscribes to, that are missing from partitions or have
// no partitions are left out, as Kafka skips topics without metadata.
func newGroup(members []Member, partitions map[string]int32) (*group, error) {
	for topic, n := range partitions {
		if n < 0 {
			return nil, fmt.Errorf("topic %q has a negative partition count %d", topic, n)
		}
	}
	g := &group{
		members:     make([]*member, len(members)),
		counts:      partitions,
		subscribers: make(map[string][]int),
	}
	seen := make(map[string]struct{}, len(members))
	for i := range members {
		m := &members[i]
		if m.ID == "" {
			return nil, fmt.Errorf("member %d has an empty member ID", i)
		}
		if _, dup := seen[m.ID]; dup {
			return nil, fmt.Errorf("member ID %q appears more than once", m.ID)
		}
		seen[m.ID] = struct{}{}
		topics := slices.Clone(m.Topics)
		slices.SortFunc(topics, javaCompare)
		g.members[i] = &member{Member: m, topics: slices.Compact(topics)}
	}
	slices.SortFunc(g.members, compareMembers)
	for i, m := range g.members {
		for _, t := range m.topics {
			if partitions[t] > 0 {
				g.subscribers[t] = append(g.subscribers[t], i)
			}
		}
	}
	g.topics = make([]string, 0, len(g.subscribers))
	var total int64
	for t := range g.subscribers {
		g.topics = append(g.topics, t)
		total += int64(partitions[t])
	}
	if total > MaxPartitions {
		return nil, fmt.Errorf("the group subscribes to %d partitions, more than the %d an assignment may hold", total, MaxPartitions)
	}
	slices.SortFunc(g.topics, javaCompare)
	return g, nil
}

// emptyAssignment has an entry for every member.
func (g *group) emptyAssignment() Assignment {
	a := make(Assignment, len(g.members))
	for _, m := range g.members {
		a[m.ID] = make(map[string][]int32)
	}
	return a
}

// compareMembers is Kafka's MemberInfo order: static members first, by
// group.instance.id, then dynamic members by member ID. Equal instance IDs
// (which a coordinator never hands out) fall back to the member ID so the
// order stays total.
func compareMembers(a, b *member) int {
	switch {
	case a.InstanceID != "" && b.InstanceID != "":
		if c := javaCompare(a.InstanceID, b.InstanceID); c != 0 {
			return c
		}
	case a.InstanceID != "":
		return -1
	case b.InstanceID != "":
		return 1
	}
	return javaCompare(a.ID, b.ID)
}

// javaCompare orders strings as Java's String.compareTo does (by UTF-16 code
// unit), so member and topic order matches a Java leader's even for
// characters outside the Basic Multilingual Plane, where UTF-8 byte order
// differs. Strings Java would see as equal (invalid UTF-8) fall back to byte
// order to keep the order total.
func javaCompare(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	if i == len(a) || i == len(b) {
		return len(a) - len(b)
	}
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, rb := a[i:], b[i:]
	for len(ra) > 0 && len(rb) > 0 {
		x, nx := utf8.DecodeRuneInString(ra)
		y, ny := utf8.DecodeRuneInString(rb)
		if x != y {
			ux, uy := utf16Units(x), utf16Units(y)
			if ux[0] != uy[0] {
				return int(ux[0]) - int(uy[0])
			}
			return int(ux[1]) - int(uy[1])
		}
		ra, rb = ra[nx:], rb[ny:]
	}
	if len(ra) != len(rb) {
		return len(ra) - len(rb)
	}
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}

// utf16Units returns the UTF-16 encoding of r, the second unit zero for
// characters in the Basic Multilingual Plane.
func utf16Units(r rune) [2]uint16 {
	if r < 0x10000 {
		return [2]uint16{uint16(r)}
	}
	r -= 0x10000
	return [2]uint16{uint16(0xD800 + r>>10), uint16(0xDC00 + r&0x3FF)}
}
