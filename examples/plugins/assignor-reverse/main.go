// Command ktool-assignor-reverse is an example external partition assignor
// plugin for ktool. It deals partitions round-robin like Kafka's
// RoundRobinAssignor, but to members in reverse member-ID order, so the
// members that sort last get the first partitions of every topic.
//
// Build it into the plugin directory and ktool finds it by its file name:
//
//	go build -o ~/.config/ktool/plugins/ktool-assignor-reverse ./examples/plugins/assignor-reverse
package main

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/ktoolhq/ktool/assignor"
	"github.com/ktoolhq/ktool/plugins"
)

const version = "1.0.0"

func main() {
	if err := plugins.ServeAssignor(reverse{}, version); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

type reverse struct{}

func (reverse) Name() string { return "reverse" }

func (reverse) Cooperative() bool { return false }

// UserData is nil: the strategy does not look at what members owned.
func (reverse) UserData(map[string][]int32, int32) []byte { return nil }

func (reverse) Assign(members []assignor.Member, partitions map[string]int32) (assignor.Assignment, error) {
	ids := make([]string, 0, len(members))
	subscribed := make(map[string]map[string]bool, len(members))
	out := make(assignor.Assignment, len(members))
	for _, m := range members {
		if m.ID == "" {
			return nil, fmt.Errorf("a member has an empty member ID")
		}
		if _, dup := subscribed[m.ID]; dup {
			return nil, fmt.Errorf("member ID %q appears more than once", m.ID)
		}
		ids = append(ids, m.ID)
		subscribed[m.ID] = map[string]bool{}
		for _, t := range m.Topics {
			subscribed[m.ID][t] = true
		}
		out[m.ID] = map[string][]int32{}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(ids)))

	topics := make([]string, 0, len(partitions))
	for t, n := range partitions {
		if n < 0 {
			return nil, fmt.Errorf("topic %q has a negative partition count %d", t, n)
		}
		topics = append(topics, t)
	}
	slices.SortFunc(topics, strings.Compare)

	next := 0 // the dealing position carries over from topic to topic
	for _, t := range topics {
		var subs []string
		for _, id := range ids {
			if subscribed[id][t] {
				subs = append(subs, id)
			}
		}
		if len(subs) == 0 {
			continue
		}
		for p := range partitions[t] {
			id := subs[next%len(subs)]
			out[id][t] = append(out[id][t], p)
			next++
		}
	}
	return out, nil
}
