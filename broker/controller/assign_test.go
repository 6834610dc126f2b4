package controller

import (
	"slices"
	"testing"
)

func TestAssignReplicasSpreadsLeadersAndFollowers(t *testing.T) {
	got, err := AssignReplicas([]int32{2, 0, 1}, 3, 3, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	leaders := map[int32]int{}
	for p := int32(0); p < 3; p++ {
		r := got[p]
		if len(r) != 3 {
			t.Fatalf("partition %d has %d replicas", p, len(r))
		}
		s := slices.Clone(r)
		slices.Sort(s)
		if !slices.Equal(s, []int32{0, 1, 2}) {
			t.Fatalf("partition %d replicas %v are not distinct brokers", p, r)
		}
		leaders[r[0]]++
	}
	if len(leaders) != 3 {
		t.Fatalf("preferred leaders %v are not spread over the 3 brokers", leaders)
	}
	// Kafka's example: start index 0, brokers 0..4, 10 partitions, RF 3.
	got, err = AssignReplicas([]int32{0, 1, 2, 3, 4}, 10, 3, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32][]int32{0: {0, 1, 2}, 1: {1, 2, 3}, 4: {4, 0, 1}, 5: {0, 2, 3}, 9: {4, 1, 2}}
	for p, w := range want {
		if !slices.Equal(got[p], w) {
			t.Errorf("partition %d = %v, want %v", p, got[p], w)
		}
	}
	if _, err := AssignReplicas([]int32{0, 1}, 1, 3, 0, -1); err == nil {
		t.Error("replication factor above the broker count must fail")
	}
}
