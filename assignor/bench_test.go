package assignor_test

import (
	"fmt"
	"testing"

	"github.com/ktoolhq/ktool/assignor"
)

// BenchmarkAssign assigns 10 topics of 1,000 partitions to 1,000 members
// subscribed to all of them: from scratch, and (rebalance) after one
// member left a balanced group, which is where sticky assignors work.
func BenchmarkAssign(b *testing.B) {
	partitions := make(map[string]int32, 10)
	var topics []string
	for t := range 10 {
		name := fmt.Sprintf("topic-%02d", t)
		partitions[name] = 1000
		topics = append(topics, name)
	}
	members := make([]assignor.Member, 1000)
	for i := range members {
		members[i] = assignor.Member{ID: fmt.Sprintf("consumer-%04d", i), Topics: topics, Generation: -1}
	}
	for _, a := range assignor.Builtins() {
		b.Run(a.Name()+"/1000members-10000partitions", func(b *testing.B) {
			for b.Loop() {
				if _, err := a.Assign(members, partitions); err != nil {
					b.Fatal(err)
				}
			}
		})
		first, err := a.Assign(members, partitions)
		if err != nil {
			b.Fatal(err)
		}
		rejoin := make([]assignor.Member, len(members)-1)
		for i := range rejoin {
			m := members[i]
			m.Owned, m.Generation = first[m.ID], 1
			m.UserData = a.UserData(m.Owned, 1)
			rejoin[i] = m
		}
		b.Run(a.Name()+"/1000members-10000partitions-rebalance", func(b *testing.B) {
			for b.Loop() {
				if _, err := a.Assign(rejoin, partitions); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
