package group

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// state is a group's state, with Kafka's names.
type state int8

const (
	stateEmpty state = iota
	statePreparingRebalance
	stateCompletingRebalance
	stateStable
	stateDead
)

func (s state) String() string {
	switch s {
	case stateEmpty:
		return "Empty"
	case statePreparingRebalance:
		return "PreparingRebalance"
	case stateCompletingRebalance:
		return "CompletingRebalance"
	case stateStable:
		return "Stable"
	default:
		return "Dead"
	}
}

// consumerProtocolType is the protocol type of Kafka consumers, whose member
// metadata says which topics they subscribe to.
const consumerProtocolType = "consumer"

type protocol struct {
	name     string
	metadata []byte
}

// joinWaiter is a JoinGroup request parked until the rebalance completes.
type joinWaiter struct {
	version int16
	respond func(*kmsg.JoinGroupResponse)
}

// syncWaiter is a SyncGroup request parked until the leader's assignment is stored.
type syncWaiter struct {
	version int16
	respond func(*kmsg.SyncGroupResponse)
}

type member struct {
	id               string
	instanceID       *string
	clientID         string
	clientHost       string
	rebalanceTimeout time.Duration
	sessionTimeout   time.Duration
	protocolType     string
	protocols        []protocol
	assignment       []byte
	seq              uint64 // join order, for stable listings

	join *joinWaiter
	sync *syncWaiter
	// isNew marks a member added in the current rebalance: until that rebalance
	// completes it is expired by its join timeout, not kept alive by waiting.
	isNew bool
	hb    *time.Timer
	hbSeq uint64
}

func (m *member) metadataFor(name string) []byte {
	for _, p := range m.protocols {
		if p.name == name {
			return p.metadata
		}
	}
	return nil
}

func (m *member) supports(name string) bool {
	return slices.ContainsFunc(m.protocols, func(p protocol) bool { return p.name == name })
}

// matches reports whether a rejoin carries the same protocols as the member has.
func (m *member) matches(ps []protocol) bool {
	return slices.EqualFunc(m.protocols, ps, func(a, b protocol) bool {
		return a.name == b.name && string(a.metadata) == string(b.metadata)
	})
}

type group struct {
	id           string
	state        state
	stateAt      int64 // Unix ms of the last transition; -1 unknown (old metadata)
	protocolType string
	protocol     string
	generation   int32
	leader       string
	members      map[string]*member
	static       map[string]string // group.instance.id -> member id
	pending      map[string]*time.Timer
	awaitingJoin int
	seq          uint64
	offsets      map[topicPartition]offsetEntry
	// pendingTxn holds transactional offset commits by producer id until
	// the producer's marker (txn.go).
	pendingTxn map[int64]map[topicPartition]pendingOffset
	// subscribed is the union of the consumer members' topics for the current
	// generation; nil when unknown (not a consumer group, or unparsable metadata).
	subscribed map[string]bool

	joinTimer      *time.Timer
	joinSeq        uint64
	initialDelay   bool // the pending join is the initial delay of a new group
	newMemberAdded bool
	initialLeft    time.Duration
}

func newGroup(id string, now time.Time) *group {
	return &group{
		id:      id,
		stateAt: now.UnixMilli(),
		members: map[string]*member{},
		static:  map[string]string{},
		pending: map[string]*time.Timer{},
		offsets: map[topicPartition]offsetEntry{},
	}
}

func (g *group) transition(s state, now time.Time) {
	g.state = s
	g.stateAt = now.UnixMilli()
}

// sortedMembers lists members in join order.
func (g *group) sortedMembers() []*member {
	out := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

func (g *group) add(m *member, w *joinWaiter) {
	if len(g.members) == 0 {
		g.protocolType = m.protocolType
	}
	if g.leader == "" {
		g.leader = m.id
	}
	g.seq++
	m.seq = g.seq
	g.members[m.id] = m
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
	m.join = w
	if w != nil {
		g.awaitingJoin++
	}
	if t, ok := g.pending[m.id]; ok {
		t.Stop()
		delete(g.pending, m.id)
	}
}

// remove drops a member; a leader's leadership passes to the earliest remaining member.
func (g *group) remove(id string) {
	m, ok := g.members[id]
	if !ok {
		return
	}
	if m.hb != nil {
		m.hb.Stop()
	}
	if m.join != nil {
		g.awaitingJoin--
	}
	delete(g.members, id)
	if m.instanceID != nil && g.static[*m.instanceID] == id {
		delete(g.static, *m.instanceID)
	}
	if g.leader == id {
		g.leader = ""
		if rest := g.sortedMembers(); len(rest) > 0 {
			g.leader = rest[0].id
		}
	}
}

// staticFenced reports a static member whose instance id is now held by another member id.
func (g *group) staticFenced(memberID string, instanceID *string) bool {
	if instanceID == nil {
		return false
	}
	cur, ok := g.static[*instanceID]
	return ok && cur != memberID
}

// supports reports whether a member with these protocols may join: a group with
// members accepts only its protocol type and a protocol every member supports.
func (g *group) supports(ptype string, ps []protocol) bool {
	if g.state == stateEmpty {
		return ptype != "" && len(ps) > 0
	}
	if g.protocolType != ptype {
		return false
	}
	for _, p := range ps {
		if g.countSupporting(p.name) == len(g.members) {
			return true
		}
	}
	return false
}

func (g *group) countSupporting(name string) int {
	n := 0
	for _, m := range g.members {
		if m.supports(name) {
			n++
		}
	}
	return n
}

// selectProtocol picks the protocol every member supports that most members
// prefer (each votes for its first supported candidate); ties go to the
// candidate the leader ranks first.
func (g *group) selectProtocol() string {
	members := g.sortedMembers()
	if len(members) == 0 {
		return ""
	}
	if l, ok := g.members[g.leader]; ok {
		members = append([]*member{l}, slices.DeleteFunc(members, func(m *member) bool { return m == l })...)
	}
	var candidates []string
	for _, p := range members[0].protocols {
		if g.countSupporting(p.name) == len(g.members) {
			candidates = append(candidates, p.name)
		}
	}
	if len(candidates) == 0 {
		return ""
	}
	votes := map[string]int{}
	for _, m := range members {
		for _, p := range m.protocols {
			if slices.Contains(candidates, p.name) {
				votes[p.name]++
				break
			}
		}
	}
	best := candidates[0]
	for _, c := range candidates[1:] {
		if votes[c] > votes[best] {
			best = c
		}
	}
	return best
}

func (g *group) allJoined() bool {
	return g.awaitingJoin == len(g.members) && len(g.pending) == 0
}

// rebalanceTimeout is the longest rebalance timeout among the members.
func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// computeSubscribed derives the consumer members' topics from their metadata.
func (g *group) computeSubscribed() {
	g.subscribed = nil
	if g.protocolType != consumerProtocolType {
		return
	}
	topics := map[string]bool{}
	for _, m := range g.members {
		if g.protocol == "" {
			return
		}
		var md kmsg.ConsumerMemberMetadata
		if err := md.ReadFrom(m.metadataFor(g.protocol)); err != nil {
			return
		}
		for _, t := range md.Topics {
			topics[t] = true
		}
	}
	g.subscribed = topics
}

// subscribedTo reports whether the group may be consuming topic; unknown
// subscriptions count as subscribed, so their offsets are never dropped.
func (g *group) subscribedTo(topic string) bool {
	if g.subscribed == nil {
		return true
	}
	return g.subscribed[topic]
}

// metadataValue is the group's record value for __consumer_offsets.
func (g *group) metadataValue(assignment map[string][]byte) []byte {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupValueVersion
	v.ProtocolType = g.protocolType
	v.Generation = g.generation
	if g.protocol != "" {
		p := g.protocol
		v.Protocol = &p
	}
	if g.leader != "" {
		l := g.leader
		v.Leader = &l
	}
	v.CurrentStateTimestamp = g.stateAt
	for _, m := range g.sortedMembers() {
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID = m.id
		vm.InstanceID = m.instanceID
		vm.ClientID, vm.ClientHost = m.clientID, m.clientHost
		vm.RebalanceTimeoutMillis = int32(m.rebalanceTimeout / time.Millisecond)
		vm.SessionTimeoutMillis = int32(m.sessionTimeout / time.Millisecond)
		vm.Subscription = nonNil(m.metadataFor(g.protocol))
		vm.Assignment = nonNil(assignment[m.id])
		v.Members = append(v.Members, vm)
	}
	return v.AppendTo(nil)
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// stateMatches reports whether a ListGroups states filter entry names s.
func stateMatches(filter []string, s state) bool {
	if len(filter) == 0 {
		return true
	}
	return slices.ContainsFunc(filter, func(f string) bool { return strings.EqualFold(f, s.String()) })
}
