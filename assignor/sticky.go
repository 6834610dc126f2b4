package assignor

import (
	"cmp"
	"encoding/binary"
	"slices"
)

// Sticky returns Kafka's StickyAssignor ("sticky"): a balanced assignment
// that keeps as many partitions as possible where they were. Members carry
// what they owned, and the generation it comes from, in
// StickyAssignorUserData, since eager members give everything up before they
// join.
//
// Balance here is optimal, not heuristic: the result has no chain of single
// partition moves that would take a partition from a member with c to a
// member with c-2 or fewer. With identical subscriptions that is "within
// one"; with uneven subscriptions it is the most even spread the
// subscriptions allow. Partitions move only along such chains, so a balanced
// group with unchanged membership keeps its assignment exactly, and with
// identical subscriptions a member leaving or joining moves the fewest
// partitions balance requires.
//
// When members disagree about who owns a partition, the claim from the
// highest generation wins; equal claims at that generation cancel out and
// the partition is assigned afresh.
func Sticky() Assignor { return stickyAssignor{} }

// CooperativeSticky returns Kafka's CooperativeStickyAssignor
// ("cooperative-sticky"): Sticky with incremental rebalancing (KIP-429).
// Owned partitions travel in the subscription and the user data carries only
// the generation. A partition that changes hands is first only revoked: it is
// left out of the new owner's assignment while any other member still claims
// it, and the new owner gets it in the rebalance that follows the revocation.
func CooperativeSticky() Assignor { return stickyAssignor{cooperative: true} }

type stickyAssignor struct{ cooperative bool }

func (s stickyAssignor) Name() string {
	if s.cooperative {
		return "cooperative-sticky"
	}
	return "sticky"
}

func (s stickyAssignor) Cooperative() bool { return s.cooperative }

func (s stickyAssignor) UserData(owned map[string][]int32, generation int32) []byte {
	if s.cooperative {
		return cooperativeUserData(generation)
	}
	return stickyUserData(owned, generation)
}

// claims returns what m says it owns and the generation of that ownership.
// Eager members join owning nothing, so for "sticky" the user data is the
// source unless the caller already decoded it into Owned; cooperative
// members list owned partitions in the subscription, and older subscription
// versions carry the generation only in the user data.
func (s stickyAssignor) claims(m *Member) (map[string][]int32, int32) {
	owned, gen := m.Owned, m.Generation
	if s.cooperative {
		if gen < 0 && len(m.UserData) == 4 {
			gen = int32(binary.BigEndian.Uint32(m.UserData))
		}
		return owned, gen
	}
	if len(owned) > 0 && gen >= 0 {
		return owned, gen
	}
	ud, udGen, err := DecodeStickyUserData(m.UserData)
	switch {
	case err != nil:
		return owned, gen
	case len(owned) == 0:
		return ud, udGen
	}
	return owned, udGen
}

func (s stickyAssignor) Assign(members []Member, partitions map[string]int32) (Assignment, error) {
	g, err := newGroup(members, partitions)
	if err != nil {
		return nil, err
	}
	st := newStickyState(g)
	st.claim(s)
	st.keepOwned()
	st.assignUnowned()
	st.balance()
	return st.assignment(s.cooperative), nil
}

// stickyState numbers topics by their index in g.topics and partitions
// consecutively, topic after topic; members are indexes into g.members.
type stickyState struct {
	g            *group
	topicIdx     map[string]int32
	base         []int32   // topic -> id of its partition 0; base[len] = total
	topicOf      []int32   // partition -> topic
	memberTopics [][]int32 // member -> topics it may consume, ascending

	// Claims going in: the resolved previous owner of each partition, and
	// who claims it at all (cooperative revocation needs every claimant).
	prev       []int32 // -1: nobody, or a tie at the highest generation
	prevGen    []int32
	claimed    []bool
	tied       []bool
	claimant   []int32 // some claimant, -1 if none
	multiClaim []bool  // claimed by more than one member
	topGen     []int32 // the highest generation any claim on it has
	memberGen  []int32 // member -> generation of its claims
	claims     [][]int32

	owner    []int32 // the plan
	count    []int
	hold     []map[int32]*holding // member -> topic -> what it holds of it
	holders  [][]int32            // topic -> members holding some of it
	countAt  []int                // members (that can consume) per count
	maxCount int

	// BFS scratch, reused across searches via the stamp.
	stamp      int
	seenMember []int
	seenTopic  []int
	parent     []int32
	via        []int32
	queue      []int32
}

type holding struct {
	fresh []int32 // partitions new to this member: moving them costs nothing
	kept  []int32 // partitions this member owned going in
	pos   int     // index in holders[topic]
}

func newStickyState(g *group) *stickyState {
	st := &stickyState{
		g:            g,
		topicIdx:     make(map[string]int32, len(g.topics)),
		base:         make([]int32, len(g.topics)+1),
		memberTopics: make([][]int32, len(g.members)),
		holders:      make([][]int32, len(g.topics)),
		count:        make([]int, len(g.members)),
		hold:         make([]map[int32]*holding, len(g.members)),
		seenMember:   make([]int, len(g.members)),
		seenTopic:    make([]int, len(g.topics)),
		parent:       make([]int32, len(g.members)),
		via:          make([]int32, len(g.members)),
	}
	for ti, topic := range g.topics {
		st.topicIdx[topic] = int32(ti)
		st.base[ti+1] = st.base[ti] + g.counts[topic]
		for _, mi := range g.subscribers[topic] {
			st.memberTopics[mi] = append(st.memberTopics[mi], int32(ti))
		}
	}
	total := st.base[len(g.topics)]
	st.topicOf = make([]int32, total)
	for ti := range g.topics {
		for p := st.base[ti]; p < st.base[ti+1]; p++ {
			st.topicOf[p] = int32(ti)
		}
	}
	st.prev = filled(total, -1)
	st.prevGen = make([]int32, total)
	st.claimed = make([]bool, total)
	st.tied = make([]bool, total)
	st.claimant = filled(total, -1)
	st.multiClaim = make([]bool, total)
	st.topGen = make([]int32, total)
	st.memberGen = make([]int32, len(g.members))
	st.claims = make([][]int32, len(g.members))
	st.owner = filled(total, -1)
	st.countAt = make([]int, total+1)
	for mi := range g.members {
		if len(st.memberTopics[mi]) > 0 {
			st.countAt[0]++
		}
	}
	return st
}

func filled(n int32, v int32) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = v
	}
	return s
}

func (st *stickyState) subscribes(mi, ti int32) bool {
	_, ok := slices.BinarySearch(st.memberTopics[mi], ti)
	return ok
}

// claim resolves the previous owner of every partition. The outcome does
// not depend on the order claims are seen in: the unique claimant at the
// highest generation wins. A claim on a topic the member no longer
// subscribes to does not make it the owner, but it is still a claim: the
// member consumes the partition until it revokes it.
func (st *stickyState) claim(s stickyAssignor) {
	for i, m := range st.g.members {
		mi := int32(i)
		owned, gen := s.claims(m.Member)
		st.memberGen[mi] = gen
		for topic, parts := range owned {
			ti, ok := st.topicIdx[topic]
			if !ok {
				continue
			}
			n := st.base[ti+1] - st.base[ti]
			valid := st.subscribes(mi, ti)
			for _, p := range parts {
				if p < 0 || p >= n {
					continue
				}
				id := st.base[ti] + p
				switch c := st.claimant[id]; {
				case c == -1:
					st.claimant[id], st.topGen[id] = mi, gen
				case c != mi:
					st.multiClaim[id] = true
				}
				st.topGen[id] = max(st.topGen[id], gen)
				st.claims[mi] = append(st.claims[mi], id)
				if !valid {
					continue
				}
				switch {
				case !st.claimed[id] || gen > st.prevGen[id]:
					st.claimed[id], st.prev[id], st.prevGen[id], st.tied[id] = true, mi, gen, false
				case gen == st.prevGen[id] && st.prev[id] != mi:
					st.tied[id] = true
				}
			}
		}
	}
	for id := range st.prev {
		if st.tied[id] {
			st.prev[id] = -1
		}
	}
	for _, c := range st.claims {
		slices.Sort(c)
	}
}

// withheld reports whether cooperative rebalancing must hold partition id
// back from mi: another member still claims it, and mi does not already
// own it. A claim counts as owning only at the highest generation claimed
// for the partition; a member that missed rebalances may claim a partition
// that since went to another member, which is consuming it now (KIP-792).
func (st *stickyState) withheld(id, mi int32) bool {
	if c := st.claimant[id]; c == -1 || c == mi && !st.multiClaim[id] {
		return false
	}
	_, mine := slices.BinarySearch(st.claims[mi], id)
	return !mine || st.memberGen[mi] < st.topGen[id]
}

func (st *stickyState) keepOwned() {
	for id, mi := range st.prev {
		if mi >= 0 {
			st.give(mi, st.topicOf[id], int32(id))
		}
	}
}

// assignUnowned gives each partition nobody kept to the least loaded member
// that can take it, topics with the fewest candidates first, as those have
// the least room to choose.
func (st *stickyState) assignUnowned() {
	order := make([]int32, len(st.g.topics))
	for ti := range order {
		order[ti] = int32(ti)
	}
	slices.SortStableFunc(order, func(a, b int32) int {
		return cmp.Compare(len(st.g.subscribers[st.g.topics[a]]), len(st.g.subscribers[st.g.topics[b]]))
	})
	var h memberHeap
	for _, ti := range order {
		h.st, h.items = st, h.items[:0]
		for id := st.base[ti]; id < st.base[ti+1]; id++ {
			if st.owner[id] >= 0 {
				continue
			}
			if len(h.items) == 0 {
				for _, mi := range st.g.subscribers[st.g.topics[ti]] {
					h.items = append(h.items, int32(mi))
				}
				h.init()
			}
			st.give(h.items[0], ti, id)
			h.fix0()
		}
	}
}

// balance moves partitions along cost-reducing chains (a partition from
// each member to the previous one, from a member with c partitions to one
// with c-2 or fewer) until none is left, which makes the assignment an
// optimal semi-matching: no member can be made less loaded without making a
// more loaded one. Each chain takes from the most loaded member reachable,
// so with identical subscriptions only members above their final share give
// anything up.
func (st *stickyState) balance() {
	members := make([]int32, 0, len(st.g.members))
	for mi := range st.g.members {
		if len(st.memberTopics[mi]) > 0 {
			members = append(members, int32(mi))
		}
	}
	for st.maxCount-st.minCount() > 1 {
		slices.SortFunc(members, func(a, b int32) int {
			return cmp.Or(cmp.Compare(st.count[a], st.count[b]), cmp.Compare(a, b))
		})
		improved := false
		for _, l := range members {
			for st.count[l]+2 <= st.maxCount && st.augment(l) {
				improved = true
			}
		}
		if !improved {
			return
		}
	}
}

func (st *stickyState) minCount() int {
	for c, n := range st.countAt {
		if n > 0 {
			return c
		}
	}
	return 0
}

// augment searches breadth first from l for a member that holds at least
// two partitions more and is connected to l by a chain of members each able
// to take a partition the next one holds, and moves one partition along the
// shortest such chain. It reports whether it found one.
func (st *stickyState) augment(l int32) bool {
	st.stamp++
	st.seenMember[l] = st.stamp
	st.queue = append(st.queue[:0], l)
	best := int32(-1)
search:
	for qi := 0; qi < len(st.queue); qi++ {
		x := st.queue[qi]
		for _, ti := range st.memberTopics[x] {
			if st.seenTopic[ti] == st.stamp {
				continue
			}
			st.seenTopic[ti] = st.stamp
			for _, y := range st.holders[ti] {
				if st.seenMember[y] == st.stamp {
					continue
				}
				st.seenMember[y] = st.stamp
				st.parent[y], st.via[y] = x, ti
				if st.count[y] >= st.count[l]+2 && (best < 0 || st.count[y] > st.count[best]) {
					best = y
					if st.count[y] == st.maxCount {
						break search
					}
				}
				st.queue = append(st.queue, y)
			}
		}
	}
	if best < 0 {
		return false
	}
	for y := best; y != l; y = st.parent[y] {
		x, ti := st.parent[y], st.via[y]
		st.give(x, ti, st.take(y, ti))
	}
	return true
}

// give adds partition id of topic ti to member mi's plan.
func (st *stickyState) give(mi, ti, id int32) {
	hs := st.hold[mi]
	if hs == nil {
		hs = make(map[int32]*holding)
		st.hold[mi] = hs
	}
	h := hs[ti]
	if h == nil {
		h = &holding{pos: len(st.holders[ti])}
		hs[ti] = h
		st.holders[ti] = append(st.holders[ti], mi)
	}
	if st.prev[id] == mi {
		h.kept = append(h.kept, id)
	} else {
		h.fresh = append(h.fresh, id)
	}
	st.owner[id] = mi
	st.setCount(mi, st.count[mi]+1)
}

// take removes one partition of topic ti from member mi's plan, one that is
// new to the member if it has any, so that moves undo fresh choices before
// they break stickiness.
func (st *stickyState) take(mi, ti int32) int32 {
	h := st.hold[mi][ti]
	var id int32
	if n := len(h.fresh); n > 0 {
		id, h.fresh = h.fresh[n-1], h.fresh[:n-1]
	} else {
		n := len(h.kept)
		id, h.kept = h.kept[n-1], h.kept[:n-1]
	}
	if len(h.fresh)+len(h.kept) == 0 {
		hs := st.holders[ti]
		last := hs[len(hs)-1]
		hs[h.pos] = last
		st.hold[last][ti].pos = h.pos
		st.holders[ti] = hs[:len(hs)-1]
		delete(st.hold[mi], ti)
	}
	st.owner[id] = -1
	st.setCount(mi, st.count[mi]-1)
	return id
}

func (st *stickyState) setCount(mi int32, c int) {
	st.countAt[st.count[mi]]--
	st.countAt[c]++
	st.count[mi] = c
	if c > st.maxCount {
		st.maxCount = c
	}
	for st.maxCount > 0 && st.countAt[st.maxCount] == 0 {
		st.maxCount--
	}
}

// assignment renders the plan. For cooperative rebalancing a partition is
// withheld from its new owner while another member still claims it; that
// member sees the partition missing from its own assignment, revokes it and
// rejoins, and the next rebalance hands it over. A member that already owns
// a partition keeps it even if a stale claim elsewhere exists: the other
// claimant revokes it, and no member starts consuming anything.
func (st *stickyState) assignment(cooperative bool) Assignment {
	out := st.g.emptyAssignment()
	for ti, topic := range st.g.topics {
		for id := st.base[ti]; id < st.base[ti+1]; id++ {
			mi := st.owner[id]
			if cooperative && st.withheld(id, mi) {
				continue
			}
			m := out[st.g.members[mi].ID]
			m[topic] = append(m[topic], id-st.base[ti])
		}
	}
	return out
}

// memberHeap orders members by partitions held, then member order.
type memberHeap struct {
	st    *stickyState
	items []int32
}

func (h *memberHeap) less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	return h.st.count[a] < h.st.count[b] || h.st.count[a] == h.st.count[b] && a < b
}

func (h *memberHeap) init() {
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// fix0 restores the heap after the top member's count went up.
func (h *memberHeap) fix0() { h.down(0) }

func (h *memberHeap) down(i int) {
	n := len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && h.less(r, l) {
			c = r
		}
		if !h.less(c, i) {
			return
		}
		h.items[i], h.items[c] = h.items[c], h.items[i]
		i = c
	}
}
