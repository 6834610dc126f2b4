// Package replicastate is a partition's replica state as a Metadata response
// reports it (leader, AR, ISR, out-of-sync and offline replicas, preferred
// leader), shared by the commands that show or reason about it: topic
// describe, election planning and cluster health.
package replicastate

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Partition is one partition's replica and offset state. Field names in JSON
// and YAML are part of ktool's stable output (see tools/README-fields.md).
type Partition struct {
	Partition       int32   `json:"partition" yaml:"partition"`
	Leader          int32   `json:"leader" yaml:"leader"`
	LeaderEpoch     int32   `json:"leader_epoch" yaml:"leader_epoch"`
	Replicas        []int32 `json:"replicas" yaml:"replicas"`
	ISR             []int32 `json:"isr" yaml:"isr"`
	OSR             []int32 `json:"osr" yaml:"osr"`
	Offline         []int32 `json:"offline_replicas" yaml:"offline_replicas"`
	PreferredLeader bool    `json:"preferred_leader" yaml:"preferred_leader"`
	LogStartOffset  int64   `json:"log_start_offset" yaml:"log_start_offset"`
	HighWatermark   int64   `json:"high_watermark" yaml:"high_watermark"`
	Error           string  `json:"error,omitempty" yaml:"error,omitempty"`

	leaderLive bool
}

// OSR returns the out-of-sync replicas: assigned replicas (AR) not in the ISR,
// in assignment order.
func OSR(replicas, isr []int32) []int32 {
	out := []int32{}
	for _, r := range replicas {
		if !slices.Contains(isr, r) {
			out = append(out, r)
		}
	}
	return out
}

// UnderReplicated reports whether some assigned replica is out of sync.
func (p Partition) UnderReplicated() bool { return len(p.ISR) < len(p.Replicas) }

// Unavailable reports whether the partition has no leader that is alive.
func (p Partition) Unavailable() bool { return p.Leader < 0 || !p.leaderLive }

// UnderMinISR reports whether a write with acks=all would be refused.
func (p Partition) UnderMinISR(minISR int) bool { return len(p.ISR) < minISR }

// AtMinISR reports whether losing one more in-sync replica would refuse
// acks=all writes.
func (p Partition) AtMinISR(minISR int) bool { return len(p.ISR) == minISR }

// FromMetadata turns one partition of a Metadata response into a Partition.
// live holds the brokers present in the same response; replicas on brokers
// that are not live count as offline, as Kafka's metadata cache does.
func FromMetadata(d kadm.PartitionDetail, live map[int32]bool) Partition {
	p := Partition{
		Partition:      d.Partition,
		Leader:         d.Leader,
		LeaderEpoch:    d.LeaderEpoch,
		Replicas:       nonNil(d.Replicas),
		ISR:            nonNil(d.ISR),
		Offline:        []int32{},
		LogStartOffset: -1,
		HighWatermark:  -1,
		leaderLive:     d.Leader >= 0 && live[d.Leader],
	}
	p.OSR = OSR(p.Replicas, p.ISR)
	for _, r := range p.Replicas {
		if slices.Contains(d.OfflineReplicas, r) || !live[r] {
			p.Offline = append(p.Offline, r)
		}
	}
	p.PreferredLeader = len(p.Replicas) > 0 && p.Leader == p.Replicas[0]
	if d.Err != nil && d.Err != kerr.LeaderNotAvailable {
		p.Error = d.Err.Error()
	}
	return p
}

// LiveBrokers is the set of brokers in a Metadata response.
func LiveBrokers(m kadm.Metadata) map[int32]bool {
	live := make(map[int32]bool, len(m.Brokers))
	for _, b := range m.Brokers {
		live[b.NodeID] = true
	}
	return live
}

func nonNil(xs []int32) []int32 {
	if xs == nil {
		return []int32{}
	}
	return slices.Clone(xs)
}
