package controller

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
)

// RackAlternated orders brokers so that consecutive ones sit in different
// racks: the racks in name order, each broker list in id order, one broker
// from each rack in turn (a:[0,3] b:[1] c:[2,4] gives 0,1,2,3,4), as Kafka's
// rack-aware assignment walks them.
func RackAlternated(racks map[int32]string) []int32 {
	byRack := map[string][]int32{}
	for id, r := range racks {
		byRack[r] = append(byRack[r], id)
	}
	names := make([]string, 0, len(byRack))
	for r, ids := range byRack {
		slices.Sort(ids)
		names = append(names, r)
	}
	sort.Strings(names)
	out := make([]int32, 0, len(racks))
	for i := 0; len(out) < len(racks); i++ {
		for _, r := range names {
			if i < len(byRack[r]) {
				out = append(out, byRack[r][i])
			}
		}
	}
	return out
}

// AssignReplicasRackAware is Kafka's rack-aware replica assignment: the
// first replicas go round-robin over the rack-alternated broker list (from
// start, random when start < 0), and each further replica is the next broker
// along the shifted walk whose rack holds no replica of the partition yet
// (once every rack has one, whose broker holds none), so a partition's
// replicas spread over as many racks as there are. racks maps every broker
// to its broker.rack.
func AssignReplicasRackAware(racks map[int32]string, partitions, replicationFactor int, firstPartition int32, start int) (map[int32][]int32, error) {
	n := len(racks)
	switch {
	case replicationFactor <= 0:
		return nil, fmt.Errorf("replication factor must be larger than 0")
	case partitions <= 0:
		return nil, fmt.Errorf("number of partitions must be larger than 0")
	case replicationFactor > n:
		return nil, fmt.Errorf("replication factor: %d larger than available brokers: %d", replicationFactor, n)
	}
	numRacks := 0
	seen := map[string]bool{}
	for _, r := range racks {
		if !seen[r] {
			seen[r] = true
			numRacks++
		}
	}
	brokers := RackAlternated(racks)
	startIndex, shift := start, start
	if start < 0 {
		startIndex, shift = rand.IntN(n), rand.IntN(n)
	}
	out := make(map[int32][]int32, partitions)
	p := max(firstPartition, 0)
	for range partitions {
		if p > 0 && int(p)%n == 0 {
			shift++
		}
		first := (int(p) + startIndex) % n
		leader := brokers[first]
		replicas := []int32{leader}
		usedRacks := map[string]bool{racks[leader]: true}
		k := 0
		for len(replicas) < replicationFactor {
			b := brokers[replicaIndex(first, shift*numRacks, k, n)]
			k++
			if (usedRacks[racks[b]] && len(usedRacks) < numRacks) || (slices.Contains(replicas, b) && len(replicas) < n) {
				continue
			}
			replicas = append(replicas, b)
			usedRacks[racks[b]] = true
		}
		out[p] = replicas
		p++
	}
	return out, nil
}
