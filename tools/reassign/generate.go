package reassign

import (
	"fmt"
	"slices"
	"sort"
)

// BrokerInfo is a broker a plan may place replicas on.
type BrokerInfo struct {
	ID   int32  `json:"id" yaml:"id"`
	Rack string `json:"rack,omitempty" yaml:"rack,omitempty"`
}

// GenerateOptions tune Generate.
type GenerateOptions struct {
	// Rebalance also moves replicas off brokers holding more than their share
	// (adding brokers); without it only replicas on brokers that are not
	// targets move (removing brokers: the fewest moves).
	Rebalance bool
}

type tp struct {
	topic     string
	partition int32
}

// Generate places every replica of cur on the target brokers and returns the
// new assignment. Replicas stay where they are when they may: on a target
// broker, not a second replica in a rack while another rack has none. New
// replicas go to the least-loaded broker of an unused rack. With Rebalance,
// replicas then move one at a time from the fullest brokers to the emptiest
// until the counts differ by at most one (evenOut). The preferred leaders
// (first replicas) are then spread
// evenly, keeping the current preferred leader where its broker has room:
// reordering replicas moves no data.
func Generate(cur Assignment, brokers []BrokerInfo, opts GenerateOptions) (Assignment, error) {
	if len(brokers) == 0 {
		return nil, fmt.Errorf("no target brokers")
	}
	rack := map[int32]string{}
	racks := map[string]bool{}
	withRack := 0
	for _, b := range brokers {
		if _, dup := rack[b.ID]; dup {
			return nil, fmt.Errorf("broker %d is listed twice", b.ID)
		}
		rack[b.ID] = b.Rack
		if b.Rack != "" {
			withRack++
			racks[b.Rack] = true
		}
	}
	if withRack != 0 && withRack != len(brokers) {
		return nil, fmt.Errorf("%d of %d target brokers have a broker.rack: give every broker a rack, or none", withRack, len(brokers))
	}
	rackAware := withRack > 0
	ids := make([]int32, 0, len(brokers))
	for _, b := range brokers {
		ids = append(ids, b.ID)
	}
	slices.Sort(ids)

	var parts []tp
	for t, ps := range cur {
		for p, rs := range ps {
			if len(rs) > len(brokers) {
				return nil, fmt.Errorf("%s-%d has %d replicas but there are %d target brokers", t, p, len(rs), len(brokers))
			}
			parts = append(parts, tp{t, p})
		}
	}
	sort.Slice(parts, func(i, j int) bool {
		if parts[i].topic != parts[j].topic {
			return parts[i].topic < parts[j].topic
		}
		return parts[i].partition < parts[j].partition
	})
	// perRack is how many replicas of one partition a rack may hold: one, unless
	// there are fewer racks than replicas.
	perRack := func(rf int) int {
		if !rackAware || len(racks) == 0 {
			return rf
		}
		return (rf + len(racks) - 1) / len(racks)
	}
	count := map[int32]int{}
	next := map[tp][]int32{}
	for _, k := range parts {
		rs := cur[k.topic][k.partition]
		inRack := map[string]int{}
		var keep []int32
		for _, r := range rs {
			if _, ok := rack[r]; !ok {
				continue
			}
			if rackAware && inRack[rack[r]] >= perRack(len(rs)) {
				continue
			}
			inRack[rack[r]]++
			keep = append(keep, r)
		}
		next[k] = keep
		for _, r := range keep {
			count[r]++
		}
	}
	for _, k := range parts {
		rf := len(cur[k.topic][k.partition])
		for len(next[k]) < rf {
			inRack := map[string]int{}
			for _, r := range next[k] {
				inRack[rack[r]]++
			}
			best := int32(-1)
			better := func(b int32) bool {
				if best < 0 {
					return true
				}
				if rackAware {
					if ib, ibest := inRack[rack[b]], inRack[rack[best]]; ib != ibest {
						return ib < ibest
					}
				}
				if count[b] != count[best] {
					return count[b] < count[best]
				}
				return b < best
			}
			for _, b := range ids {
				if !slices.Contains(next[k], b) && better(b) {
					best = b
				}
			}
			next[k] = append(next[k], best)
			count[best]++
		}
	}
	if opts.Rebalance {
		evenOut(parts, next, ids, count, func(k tp, from, to int32) bool {
			if !rackAware || rack[from] == rack[to] {
				return true
			}
			in := 0
			for _, r := range next[k] {
				if rack[r] == rack[to] {
					in++
				}
			}
			return in < perRack(len(next[k]))
		})
	}

	// Preferred leaders: keep the current one while its broker is under an even
	// share, then even out the rest by reordering.
	keepShare := max(len(parts)/len(ids), 1)
	leaders := map[int32]int{}
	out := Assignment{}
	for _, k := range parts {
		rs := next[k]
		was := cur[k.topic][k.partition][0]
		lead := -1
		if i := slices.Index(rs, was); i >= 0 && leaders[was] < keepShare {
			lead = i
		} else {
			for i, r := range rs {
				if lead < 0 || leaders[r] < leaders[rs[lead]] {
					lead = i
				}
			}
		}
		leaders[rs[lead]]++
		if out[k.topic] == nil {
			out[k.topic] = map[int32][]int32{}
		}
		out[k.topic][k.partition] = lead1st(rs, lead)
	}
	for range len(parts) * len(ids) {
		if !moveLeader(out, parts, ids, leaders) {
			break
		}
	}
	return out, nil
}

// evenOut moves replicas one at a time from a broker holding the most to one
// holding at least two fewer, until no such move is left. Each move narrows
// the spread of the counts, so no replica moves twice and the plan moves as
// few as an even spread needs. A move takes a replica that is not the
// preferred leader first, from the last partitions first (the result does
// not depend on map order), onto a broker that does not hold the partition
// and where allowed (the racks) lets it.
func evenOut(parts []tp, next map[tp][]int32, ids []int32, count map[int32]int, allowed func(k tp, from, to int32) bool) {
	byLoad := slices.Clone(ids)
	for {
		sort.SliceStable(byLoad, func(i, j int) bool { return count[byLoad[i]] > count[byLoad[j]] })
		moved := false
	search:
		for _, from := range byLoad {
			for j := len(byLoad) - 1; j >= 0; j-- {
				to := byLoad[j]
				if count[from]-count[to] < 2 {
					break
				}
				if moveOne(parts, next, from, to, allowed) {
					count[from]--
					count[to]++
					moved = true
					break search
				}
			}
		}
		if !moved {
			return
		}
	}
}

// moveOne replaces from by to in one partition that holds from and not to.
func moveOne(parts []tp, next map[tp][]int32, from, to int32, allowed func(k tp, from, to int32) bool) bool {
	for pass := range 2 {
		for i := len(parts) - 1; i >= 0; i-- {
			k := parts[i]
			idx := slices.Index(next[k], from)
			if idx < 0 || (pass == 0 && idx == 0) || slices.Contains(next[k], to) || !allowed(k, from, to) {
				continue
			}
			rs := slices.Clone(next[k])
			rs[idx] = to
			next[k] = rs
			return true
		}
	}
	return false
}

// Changes lists the partitions whose replicas (or their order) differ.
func Changes(cur, next Assignment) Assignment {
	out := Assignment{}
	for t, ps := range next {
		for p, rs := range ps {
			if !slices.Equal(cur[t][p], rs) {
				if out[t] == nil {
					out[t] = map[int32][]int32{}
				}
				out[t][p] = rs
			}
		}
	}
	return out
}

// Moves counts the replicas next places on a broker that did not hold them.
func Moves(cur, next Assignment) int {
	n := 0
	for t, ps := range next {
		for p, rs := range ps {
			for _, r := range rs {
				if !slices.Contains(cur[t][p], r) {
					n++
				}
			}
		}
	}
	return n
}

// Load is one broker's share of an assignment.
type Load struct {
	Broker   int32  `json:"broker" yaml:"broker"`
	Rack     string `json:"rack,omitempty" yaml:"rack,omitempty"`
	Replicas int    `json:"replicas" yaml:"replicas"`
	Leaders  int    `json:"preferred_leaders" yaml:"preferred_leaders"`
	// ReplicaSkew and LeaderSkew are the difference from the even share, in
	// percent of it (0: exactly even).
	ReplicaSkew float64 `json:"replica_skew_pct" yaml:"replica_skew_pct"`
	LeaderSkew  float64 `json:"leader_skew_pct" yaml:"leader_skew_pct"`
}

// Loads counts replicas and preferred leaders per broker (every broker in
// brokers, and any other that holds replicas).
func Loads(a Assignment, brokers []BrokerInfo) []Load {
	by := map[int32]*Load{}
	for _, b := range brokers {
		by[b.ID] = &Load{Broker: b.ID, Rack: b.Rack}
	}
	replicas, partitions := 0, 0
	for _, ps := range a {
		for _, rs := range ps {
			partitions++
			for i, r := range rs {
				l, ok := by[r]
				if !ok {
					l = &Load{Broker: r}
					by[r] = l
				}
				l.Replicas++
				replicas++
				if i == 0 {
					l.Leaders++
				}
			}
		}
	}
	out := make([]Load, 0, len(by))
	n := float64(len(brokers))
	for _, l := range by {
		if n > 0 && replicas > 0 {
			avg := float64(replicas) / n
			l.ReplicaSkew = (float64(l.Replicas) - avg) / avg * 100
		}
		if n > 0 && partitions > 0 {
			avg := float64(partitions) / n
			l.LeaderSkew = (float64(l.Leaders) - avg) / avg * 100
		}
		out = append(out, *l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Broker < out[j].Broker })
	return out
}

func lead1st(rs []int32, i int) []int32 {
	return append([]int32{rs[i]}, slices.Delete(slices.Clone(rs), i, i+1)...)
}

// moveLeader makes one partition's preferred leader a replica on a broker
// with at least two fewer leaders; it reports whether it found one.
func moveLeader(a Assignment, parts []tp, ids []int32, leaders map[int32]int) bool {
	byLoad := slices.Clone(ids)
	sort.SliceStable(byLoad, func(i, j int) bool { return leaders[byLoad[i]] > leaders[byLoad[j]] })
	for _, from := range byLoad {
		for _, k := range parts {
			rs := a[k.topic][k.partition]
			if rs[0] != from {
				continue
			}
			best := -1
			for i, r := range rs[1:] {
				if leaders[r] <= leaders[from]-2 && (best < 0 || leaders[r] < leaders[rs[best]]) {
					best = i + 1
				}
			}
			if best > 0 {
				leaders[from]--
				leaders[rs[best]]++
				a[k.topic][k.partition] = lead1st(rs, best)
				return true
			}
		}
	}
	return false
}
