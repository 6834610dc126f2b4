package assignortest

import (
	"fmt"
	"math/rand/v2"

	"github.com/ktoolhq/ktool/assignor"
)

// shape is one group to assign: members with their subscriptions and the
// partition count of each topic.
type shape struct {
	name       string
	members    []assignor.Member
	partitions map[string]int32
}

func member(id string, topics ...string) assignor.Member {
	return assignor.Member{ID: id, Topics: topics, Generation: -1}
}

func static(id, instance string, topics ...string) assignor.Member {
	m := member(id, topics...)
	m.InstanceID = instance
	return m
}

func shapes() []shape {
	s := []shape{
		{
			name:       "one member one topic",
			members:    []assignor.Member{member("c0", "t0")},
			partitions: map[string]int32{"t0": 3},
		},
		{
			name:       "two members two topics",
			members:    []assignor.Member{member("c0", "t0", "t1"), member("c1", "t0", "t1")},
			partitions: map[string]int32{"t0": 3, "t1": 3},
		},
		{
			name:       "three members uneven partitions",
			members:    []assignor.Member{member("c0", "t0", "t1", "t2"), member("c1", "t0", "t1", "t2"), member("c2", "t0", "t1", "t2")},
			partitions: map[string]int32{"t0": 1, "t1": 5, "t2": 7},
		},
		{
			name:       "more members than partitions",
			members:    []assignor.Member{member("c0", "t0"), member("c1", "t0"), member("c2", "t0"), member("c3", "t0"), member("c4", "t0")},
			partitions: map[string]int32{"t0": 2},
		},
		{
			name: "uneven subscriptions",
			members: []assignor.Member{
				member("c0", "t0"),
				member("c1", "t0", "t1"),
				member("c2", "t0", "t1", "t2"),
				member("c3", "t2"),
			},
			partitions: map[string]int32{"t0": 4, "t1": 6, "t2": 9},
		},
		{
			name: "disjoint subscriptions",
			members: []assignor.Member{
				member("c0", "t0"), member("c1", "t0"),
				member("c2", "t1"), member("c3", "t1"), member("c4", "t1"),
			},
			partitions: map[string]int32{"t0": 10, "t1": 2},
		},
		{
			name: "members without subscriptions",
			members: []assignor.Member{
				member("c0"), member("c1", "t0"), member("c2"), member("c3", "t0"),
			},
			partitions: map[string]int32{"t0": 5},
		},
		{
			name:       "topic nobody subscribes to",
			members:    []assignor.Member{member("c0", "t0"), member("c1", "t0")},
			partitions: map[string]int32{"t0": 4, "unwanted": 8},
		},
		{
			name:       "subscribed topic without metadata",
			members:    []assignor.Member{member("c0", "t0", "missing"), member("c1", "t0", "missing")},
			partitions: map[string]int32{"t0": 3},
		},
		{
			name:       "topic with zero partitions",
			members:    []assignor.Member{member("c0", "t0", "empty"), member("c1", "t0", "empty")},
			partitions: map[string]int32{"t0": 3, "empty": 0},
		},
		{
			name:       "no partitions at all",
			members:    []assignor.Member{member("c0", "empty"), member("c1", "empty")},
			partitions: map[string]int32{"empty": 0},
		},
		{
			name:       "no members",
			partitions: map[string]int32{"t0": 3},
		},
		{
			name: "static and dynamic members",
			members: []assignor.Member{
				member("a-dynamic", "t0", "t1"),
				static("b-static", "z", "t0", "t1"),
				static("c-static", "y", "t0", "t1"),
				member("d-dynamic", "t0", "t1"),
			},
			partitions: map[string]int32{"t0": 7, "t1": 2},
		},
		{
			name:       "duplicate topics in a subscription",
			members:    []assignor.Member{member("c0", "t0", "t0", "t1"), member("c1", "t1", "t0")},
			partitions: map[string]int32{"t0": 3, "t1": 2},
		},
		{
			name:       "non-ASCII member IDs",
			members:    []assignor.Member{member("c-\uFB01", "t0"), member("c-\U0001F600", "t0"), member("c-a", "t0")},
			partitions: map[string]int32{"t0": 5},
		},
		large("1000 members x 10000 partitions", 1000, 10, 1000, func(int) []int { return allOf(10) }),
		large("1000 members x 10000 partitions uneven", 1000, 100, 100, func(i int) []int {
			topics := make([]int, 0, 10)
			for k := range 10 {
				topics = append(topics, (i*(k+1)+k*k)%100)
			}
			return topics
		}),
	}
	for seed := range uint64(30) {
		s = append(s, random(seed))
	}
	return s
}

func allOf(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// large builds a group of n members over topics topics of parts partitions
// each, member i subscribing to the topic indexes subs(i).
func large(name string, n, topics int, parts int32, subs func(i int) []int) shape {
	s := shape{name: name, partitions: make(map[string]int32, topics)}
	for t := range topics {
		s.partitions[fmt.Sprintf("topic-%03d", t)] = parts
	}
	for i := range n {
		var ts []string
		for _, t := range subs(i) {
			ts = append(ts, fmt.Sprintf("topic-%03d", t))
		}
		s.members = append(s.members, member(fmt.Sprintf("consumer-%04d", i), ts...))
	}
	return s
}

// random builds a small group with arbitrary subscriptions, including
// members subscribed to nothing and topics nobody has metadata for.
func random(seed uint64) shape {
	r := rand.New(rand.NewPCG(seed, 0x6b746f6f6c))
	s := shape{name: fmt.Sprintf("random %d", seed), partitions: make(map[string]int32)}
	topics := 1 + r.IntN(6)
	for t := range topics {
		if r.IntN(8) > 0 {
			s.partitions[fmt.Sprintf("t%d", t)] = int32(r.IntN(13))
		}
	}
	for i := range 1 + r.IntN(12) {
		var ts []string
		for t := range topics {
			if r.IntN(2) == 0 {
				ts = append(ts, fmt.Sprintf("t%d", t))
			}
		}
		m := member(fmt.Sprintf("m%02d-%d", r.IntN(100), i), ts...)
		if r.IntN(4) == 0 {
			m.InstanceID = fmt.Sprintf("i%02d-%d", r.IntN(100), i)
		}
		s.members = append(s.members, m)
	}
	return s
}
