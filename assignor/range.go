package assignor

// Range returns Kafka's RangeAssignor ("range", the default): per topic, the
// members subscribed to it in MemberInfo order each get a contiguous range of
// partitions/members partitions, and the first partitions%members of them one
// more. It balances each topic on its own, so with several topics the first
// members can end up with several partitions more than the last.
func Range() Assignor { return rangeAssignor{} }

type rangeAssignor struct{}

func (rangeAssignor) Name() string                              { return "range" }
func (rangeAssignor) Cooperative() bool                         { return false }
func (rangeAssignor) UserData(map[string][]int32, int32) []byte { return nil }

func (rangeAssignor) Assign(members []Member, partitions map[string]int32) (Assignment, error) {
	g, err := newGroup(members, partitions)
	if err != nil {
		return nil, err
	}
	out := g.emptyAssignment()
	for _, topic := range g.topics {
		subs := g.subscribers[topic]
		n := g.counts[topic]
		per, extra := n/int32(len(subs)), n%int32(len(subs))
		next := int32(0)
		for i, mi := range subs {
			take := per
			if int32(i) < extra {
				take++
			}
			if take == 0 {
				continue
			}
			out[g.members[mi].ID][topic] = sequence(next, take)
			next += take
		}
	}
	return out, nil
}

// sequence returns from, from+1, ..., from+n-1.
func sequence(from, n int32) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = from + int32(i)
	}
	return s
}
