package controller

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// AssignReplicas spreads partitions over brokers as Kafka's rack-unaware
// assignment does: the first replica of partition p goes to broker
// (p + start) mod n, and the followers follow at a shift that grows every n
// partitions, so leaders and followers are both spread evenly. start < 0 picks a
// random start index and shift, as Kafka does; tests pass a fixed one.
func AssignReplicas(brokers []int32, partitions, replicationFactor int, firstPartition int32, start int) (map[int32][]int32, error) {
	n := len(brokers)
	if replicationFactor <= 0 {
		return nil, fmt.Errorf("replication factor must be larger than 0")
	}
	if partitions <= 0 {
		return nil, fmt.Errorf("number of partitions must be larger than 0")
	}
	if replicationFactor > n {
		return nil, fmt.Errorf("replication factor: %d larger than available brokers: %d", replicationFactor, n)
	}
	ids := slices.Clone(brokers)
	slices.Sort(ids)
	startIndex, shift := start, start
	if start < 0 {
		startIndex, shift = rand.IntN(n), rand.IntN(n)
	}
	out := make(map[int32][]int32, partitions)
	p := max(firstPartition, 0)
	for i := 0; i < partitions; i++ {
		if p > 0 && int(p)%n == 0 {
			shift++
		}
		first := (int(p) + startIndex) % n
		replicas := []int32{ids[first]}
		for j := 0; j < replicationFactor-1; j++ {
			replicas = append(replicas, ids[replicaIndex(first, shift, j, n)])
		}
		out[p] = replicas
		p++
	}
	return out, nil
}

func replicaIndex(first, shift, j, n int) int {
	s := 1 + (shift+j)%(n-1)
	return (first + s) % n
}
