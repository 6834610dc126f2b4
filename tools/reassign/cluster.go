package reassign

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// State is what a plan is made from and checked against: the brokers and
// the current assignment of the topics asked for.
type State struct {
	Brokers []BrokerInfo
	Current Assignment
	// Leaders are the partitions' current leaders.
	Leaders map[string]map[int32]int32
}

// ReadState reads the brokers and the assignment of topics (every topic,
// internal ones included, when empty).
func ReadState(ctx context.Context, adm *kadm.Client, topics ...string) (State, error) {
	m, err := cmdutil.Metadata(ctx, adm, topics...)
	if err != nil {
		return State{}, err
	}
	st := State{Current: Assignment{}, Leaders: map[string]map[int32]int32{}}
	for _, b := range m.Brokers {
		bi := BrokerInfo{ID: b.NodeID}
		if b.Rack != nil {
			bi.Rack = *b.Rack
		}
		st.Brokers = append(st.Brokers, bi)
	}
	sort.Slice(st.Brokers, func(i, j int) bool { return st.Brokers[i].ID < st.Brokers[j].ID })
	for _, t := range topics {
		td, ok := m.Topics[t]
		if !ok {
			return State{}, fmt.Errorf("topic %q does not exist", t)
		}
		if td.Err != nil {
			return State{}, fmt.Errorf("topic %q: %w", t, td.Err)
		}
	}
	for name, td := range m.Topics {
		if td.Err != nil {
			continue
		}
		st.Current[name] = map[int32][]int32{}
		st.Leaders[name] = map[int32]int32{}
		for p, pd := range td.Partitions {
			st.Current[name][p] = slices.Clone(pd.Replicas)
			st.Leaders[name][p] = pd.Leader
		}
	}
	return st, nil
}

// Targets picks the brokers with the given ids from the cluster's, keeping
// their racks; an id the cluster does not have is an error.
func (st State) Targets(ids []int32) ([]BrokerInfo, error) {
	var out []BrokerInfo
	for _, id := range ids {
		i := slices.IndexFunc(st.Brokers, func(b BrokerInfo) bool { return b.ID == id })
		if i < 0 {
			return nil, cmdutil.Usagef("broker %d is not in the cluster (brokers: %s)", id, cmdutil.JoinInt32(st.brokerIDs()))
		}
		out = append(out, st.Brokers[i])
	}
	return out, nil
}

func (st State) brokerIDs() []int32 {
	var ids []int32
	for _, b := range st.Brokers {
		ids = append(ids, b.ID)
	}
	return ids
}

// Of returns the current assignment of the partitions a plan names.
func (st State) Of(p Plan) (Assignment, error) {
	out := Assignment{}
	for _, pp := range p.Partitions {
		rs, ok := st.Current[pp.Topic][pp.Partition]
		if !ok {
			return nil, fmt.Errorf("%s-%d does not exist", pp.Topic, pp.Partition)
		}
		if out[pp.Topic] == nil {
			out[pp.Topic] = map[int32][]int32{}
		}
		out[pp.Topic][pp.Partition] = rs
	}
	return out, nil
}

// PlanAssignment is the plan as an assignment.
func PlanAssignment(p Plan) Assignment {
	a := Assignment{}
	for _, pp := range p.Partitions {
		if a[pp.Topic] == nil {
			a[pp.Topic] = map[int32][]int32{}
		}
		a[pp.Topic][pp.Partition] = pp.Replicas
	}
	return a
}

func planTopics(p Plan) []string {
	var ts []string
	for _, pp := range p.Partitions {
		if !slices.Contains(ts, pp.Topic) {
			ts = append(ts, pp.Topic)
		}
	}
	sort.Strings(ts)
	return ts
}
