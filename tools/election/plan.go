package election

import (
	"fmt"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ktoolhq/ktool/tools/replicastate"
)

// Planned is what an election would do to one partition.
type Planned struct {
	Topic     string `json:"topic" yaml:"topic"`
	Partition int32  `json:"partition" yaml:"partition"`
	Leader    int32  `json:"leader" yaml:"leader"`
	NewLeader int32  `json:"new_leader" yaml:"new_leader"`
	Outcome   string `json:"outcome" yaml:"outcome"` // would_elect, not_needed or would_fail
	Reason    string `json:"reason,omitempty" yaml:"reason,omitempty"`
}

// Imbalance is one broker's leader imbalance: of the partitions whose
// preferred replica is this broker, how many it does not lead.
type Imbalance struct {
	Broker        int32   `json:"broker" yaml:"broker"`
	Preferred     int     `json:"preferred_partitions" yaml:"preferred_partitions"`
	NotLedBefore  int     `json:"not_led_before" yaml:"not_led_before"`
	BeforePercent float64 `json:"before_percent" yaml:"before_percent"`
	NotLedAfter   int     `json:"not_led_after" yaml:"not_led_after"`
	AfterPercent  float64 `json:"after_percent" yaml:"after_percent"`
}

// Plan is the dry run's report.
type Plan struct {
	Type       string      `json:"type" yaml:"type"`
	Partitions []Planned   `json:"partitions" yaml:"partitions"`
	Imbalance  []Imbalance `json:"imbalance" yaml:"imbalance"`
}

// Outcomes of a planned election.
const (
	WouldElect = "would_elect"
	NotNeeded  = "not_needed"
	WouldFail  = "would_fail"
)

// predict says what the controller would do for one partition, following
// Kafka's rules: a preferred election moves leadership to the first assigned
// replica if it is alive and in the ISR; an unclean election only acts on a
// partition without a live leader and picks the first live in-sync replica,
// else the first live replica.
func predict(p replicastate.Partition, live map[int32]bool, unclean bool) (newLeader int32, outcome, reason string) {
	if len(p.Replicas) == 0 {
		return p.Leader, WouldFail, "the partition has no assigned replicas"
	}
	if !unclean {
		pref := p.Replicas[0]
		switch {
		case p.Leader == pref && live[pref]:
			return p.Leader, NotNeeded, "already the preferred leader"
		case !live[pref]:
			return p.Leader, WouldFail, fmt.Sprintf("preferred replica %d is down", pref)
		case !slices.Contains(p.ISR, pref):
			return p.Leader, WouldFail, fmt.Sprintf("preferred replica %d is not in the ISR", pref)
		}
		return pref, WouldElect, ""
	}
	if !p.Unavailable() {
		return p.Leader, NotNeeded, "has a live leader"
	}
	for _, r := range p.Replicas {
		if live[r] && slices.Contains(p.ISR, r) {
			return r, WouldElect, fmt.Sprintf("clean: %d is in the ISR", r)
		}
	}
	for _, r := range p.Replicas {
		if live[r] {
			return r, WouldElect, fmt.Sprintf("unclean: %d is out of sync, may lose records", r)
		}
	}
	return p.Leader, WouldFail, "no assigned replica is alive"
}

// MakePlan predicts the election for the targets (every partition when all is
// set) and the per-broker leader imbalance over the whole cluster before and
// after.
func MakePlan(m kadm.Metadata, targets []Target, all, unclean bool) Plan {
	live := replicastate.LiveBrokers(m)
	want := map[Target]bool{}
	for _, t := range targets {
		want[t] = true
	}
	plan := Plan{Type: typeName(unclean), Partitions: []Planned{}, Imbalance: []Imbalance{}}
	byBroker := map[int32]*Imbalance{}
	seen := map[Target]bool{}
	for _, td := range m.Topics.Sorted() {
		if td.Err != nil {
			continue
		}
		for _, pd := range td.Partitions.Sorted() {
			p := replicastate.FromMetadata(pd, live)
			t := Target{Topic: td.Topic, Partition: p.Partition}
			after := p.Leader
			if all || want[t] {
				seen[t] = true
				nl, outcome, reason := predict(p, live, unclean)
				plan.Partitions = append(plan.Partitions, Planned{
					Topic: t.Topic, Partition: t.Partition, Leader: p.Leader, NewLeader: nl, Outcome: outcome, Reason: reason,
				})
				after = nl
			}
			if len(p.Replicas) == 0 {
				continue
			}
			pref := p.Replicas[0]
			b := byBroker[pref]
			if b == nil {
				b = &Imbalance{Broker: pref}
				byBroker[pref] = b
			}
			b.Preferred++
			if p.Leader != pref {
				b.NotLedBefore++
			}
			if after != pref {
				b.NotLedAfter++
			}
		}
	}
	for _, t := range targets {
		if !seen[t] {
			plan.Partitions = append(plan.Partitions, Planned{Topic: t.Topic, Partition: t.Partition, Leader: -1, NewLeader: -1,
				Outcome: WouldFail, Reason: "no such partition (UNKNOWN_TOPIC_OR_PARTITION)"})
		}
	}
	for _, b := range byBroker {
		b.BeforePercent = percent(b.NotLedBefore, b.Preferred)
		b.AfterPercent = percent(b.NotLedAfter, b.Preferred)
		plan.Imbalance = append(plan.Imbalance, *b)
	}
	sort.Slice(plan.Imbalance, func(i, j int) bool { return plan.Imbalance[i].Broker < plan.Imbalance[j].Broker })
	return plan
}

func percent(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return float64(n*10000/of) / 100
}

func typeName(unclean bool) string {
	if unclean {
		return "unclean"
	}
	return "preferred"
}
