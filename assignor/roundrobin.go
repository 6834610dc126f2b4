package assignor

// RoundRobin returns Kafka's RoundRobinAssignor ("roundrobin"): all
// subscribed partitions, ordered by topic then partition, are dealt to the
// members in MemberInfo order, circularly, skipping members not subscribed to
// the partition's topic. With identical subscriptions it is balanced within
// one; with uneven subscriptions it can be far from balanced.
func RoundRobin() Assignor { return roundRobinAssignor{} }

type roundRobinAssignor struct{}

func (roundRobinAssignor) Name() string                              { return "roundrobin" }
func (roundRobinAssignor) Cooperative() bool                         { return false }
func (roundRobinAssignor) UserData(map[string][]int32, int32) []byte { return nil }

func (roundRobinAssignor) Assign(members []Member, partitions map[string]int32) (Assignment, error) {
	g, err := newGroup(members, partitions)
	if err != nil {
		return nil, err
	}
	out := g.emptyAssignment()
	next := 0 // the circular iterator's position over g.members
	subscribed := make([]bool, len(g.members))
	for _, topic := range g.topics {
		clear(subscribed)
		for _, mi := range g.subscribers[topic] {
			subscribed[mi] = true
		}
		for p := int32(0); p < g.counts[topic]; p++ {
			for !subscribed[next] {
				next = (next + 1) % len(g.members)
			}
			id := g.members[next].ID
			out[id][topic] = append(out[id][topic], p)
			next = (next + 1) % len(g.members)
		}
	}
	return out, nil
}
