package controller

import (
	"slices"
	"testing"
)

func TestRackAlternated(t *testing.T) {
	got := RackAlternated(map[int32]string{0: "a", 3: "a", 1: "b", 2: "c", 4: "c"})
	if want := []int32{0, 1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Errorf("RackAlternated = %v, want %v", got, want)
	}
	got = RackAlternated(map[int32]string{5: "r2", 1: "r1", 2: "r1", 3: "r1"})
	if want := []int32{1, 5, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("RackAlternated = %v, want %v", got, want)
	}
}

func TestAssignReplicasRackAware(t *testing.T) {
	racks := map[int32]string{0: "a", 1: "a", 2: "b", 3: "b", 4: "c", 5: "c"}
	for _, rf := range []int{1, 2, 3, 4} {
		a, err := AssignReplicasRackAware(racks, 12, rf, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		leaders := map[int32]int{}
		replicas := map[int32]int{}
		for p := int32(0); p < 12; p++ {
			rs := a[p]
			if len(rs) != rf {
				t.Fatalf("rf %d: partition %d has %v", rf, p, rs)
			}
			used := map[string]int{}
			for i, r := range rs {
				if slices.Contains(rs[:i], r) {
					t.Fatalf("rf %d: partition %d lists %d twice: %v", rf, p, r, rs)
				}
				used[racks[r]]++
				replicas[r]++
			}
			leaders[rs[0]]++
			// As many racks as replicas allow: never two in a rack while one is empty.
			if len(used) != min(rf, 3) {
				t.Errorf("rf %d: partition %d spans racks %v: %v", rf, p, used, rs)
			}
		}
		for id := range racks {
			if leaders[id] != 2 {
				t.Errorf("rf %d: broker %d leads %d partitions, want 2", rf, id, leaders[id])
			}
			if replicas[id] != 2*rf {
				t.Errorf("rf %d: broker %d holds %d replicas, want %d", rf, id, replicas[id], 2*rf)
			}
		}
	}
	if _, err := AssignReplicasRackAware(map[int32]string{0: "a"}, 1, 2, 0, 0); err == nil {
		t.Error("rf above the broker count accepted")
	}
}
