package reassign

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Partition states in a reassignment's status.
const (
	Complete   = "complete"
	InProgress = "in progress"
	// Differs: no reassignment runs and the replicas are not the plan's
	// (cancelled, never started, or changed since).
	Differs = "differs from the plan"
)

// PartitionStatus is one planned partition now.
type PartitionStatus struct {
	Topic     string  `json:"topic" yaml:"topic"`
	Partition int32   `json:"partition" yaml:"partition"`
	Target    []int32 `json:"target" yaml:"target"`
	Replicas  []int32 `json:"replicas" yaml:"replicas"`
	Adding    []int32 `json:"adding" yaml:"adding"`
	Removing  []int32 `json:"removing" yaml:"removing"`
	State     string  `json:"state" yaml:"state"`
	// BytesTotal and BytesDone are what the adding replicas must copy from
	// the leader and have copied (their log sizes), while in progress.
	BytesTotal int64 `json:"bytes_total" yaml:"bytes_total"`
	BytesDone  int64 `json:"bytes_done" yaml:"bytes_done"`
}

// Status is a plan's progress.
type Status struct {
	Partitions []PartitionStatus `json:"partitions" yaml:"partitions"`
	Complete   int               `json:"complete" yaml:"complete"`
	InProgress int               `json:"in_progress" yaml:"in_progress"`
	Differs    int               `json:"differs" yaml:"differs"`
	BytesTotal int64             `json:"bytes_total" yaml:"bytes_total"`
	BytesDone  int64             `json:"bytes_done" yaml:"bytes_done"`
	// ThrottlesRemoved is set when every partition completed and the
	// throttles were removed.
	ThrottlesRemoved bool      `json:"throttles_removed" yaml:"throttles_removed"`
	At               time.Time `json:"-" yaml:"-"`
}

// Done reports whether every partition reached the plan.
func (s Status) Done() bool { return s.Complete == len(s.Partitions) }

// ReadStatus compares the cluster with the plan. orig, when known (a
// reassignment this process started), says which replicas are new; without
// it the cluster's adding replicas are.
//
// The running reassignments are read from the controller before the replicas
// are read from a broker's metadata: a reassignment that finishes between the
// two reads then shows as complete or, where that broker's metadata still
// lags the controller, as differing, never as differing while it runs.
func ReadStatus(ctx context.Context, adm *kadm.Client, p Plan, orig Assignment) (Status, error) {
	var set kadm.TopicsSet
	for _, pp := range p.Partitions {
		set.Add(pp.Topic, pp.Partition)
	}
	running, err := adm.ListPartitionReassignments(ctx, set)
	if err != nil {
		return Status{}, err
	}
	st, err := ReadState(ctx, adm, planTopics(p)...)
	if err != nil {
		return Status{}, err
	}
	sizes := map[tp]map[int32]int64{}
	if dirs, derr := adm.DescribeAllLogDirs(ctx, set); derr == nil || len(dirs) > 0 {
		dirs.Each(func(d kadm.DescribedLogDir) {
			d.Topics.Each(func(lp kadm.DescribedLogDirPartition) {
				k := tp{lp.Topic, lp.Partition}
				if sizes[k] == nil {
					sizes[k] = map[int32]int64{}
				}
				sizes[k][lp.Broker] = max(sizes[k][lp.Broker], lp.Size)
			})
		})
	}
	s := Status{At: time.Now()}
	for _, pp := range p.Partitions {
		ps := PartitionStatus{Topic: pp.Topic, Partition: pp.Partition, Target: pp.Replicas,
			Replicas: st.Current[pp.Topic][pp.Partition], Adding: []int32{}, Removing: []int32{}}
		r, isRunning := running[pp.Topic][pp.Partition]
		switch {
		case isRunning:
			ps.State = InProgress
			ps.Adding, ps.Removing = nonNil(r.AddingReplicas), nonNil(r.RemovingReplicas)
			s.InProgress++
		case slices.Equal(ps.Replicas, pp.Replicas):
			ps.State = Complete
			s.Complete++
		default:
			ps.State = Differs
			s.Differs++
		}
		if ps.State == InProgress {
			adding := ps.Adding
			if o, ok := orig[pp.Topic][pp.Partition]; ok {
				adding = nil
				for _, b := range pp.Replicas {
					if !slices.Contains(o, b) {
						adding = append(adding, b)
					}
				}
			}
			k := tp{pp.Topic, pp.Partition}
			leaderSize := sizes[k][st.Leaders[pp.Topic][pp.Partition]]
			for _, b := range adding {
				ps.BytesTotal += leaderSize
				ps.BytesDone += min(sizes[k][b], leaderSize)
			}
			s.BytesTotal += ps.BytesTotal
			s.BytesDone += ps.BytesDone
		}
		s.Partitions = append(s.Partitions, ps)
	}
	return s, nil
}

func nonNil(xs []int32) []int32 {
	if xs == nil {
		return []int32{}
	}
	return xs
}
