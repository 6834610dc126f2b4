package reassign

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
)

// Plan is kafka-reassign-partitions.sh's reassignment JSON:
// {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}.
type Plan struct {
	Version    int             `json:"version" yaml:"version"`
	Partitions []PlanPartition `json:"partitions" yaml:"partitions"`
}

// PlanPartition is one partition's target replicas (the first is the
// preferred leader).
type PlanPartition struct {
	Topic     string   `json:"topic" yaml:"topic"`
	Partition int32    `json:"partition" yaml:"partition"`
	Replicas  []int32  `json:"replicas" yaml:"replicas"`
	LogDirs   []string `json:"log_dirs,omitempty" yaml:"log_dirs,omitempty"`
}

// maxPlanBytes bounds a plan file read into memory.
const maxPlanBytes = 64 << 20

// ReadPlan reads and checks a plan file.
func ReadPlan(r io.Reader) (Plan, error) {
	var p Plan
	dec := json.NewDecoder(io.LimitReader(r, maxPlanBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Plan{}, fmt.Errorf("not kafka-reassign-partitions.sh's JSON: %w", err)
	}
	return p, p.Check()
}

// Check refuses what the cluster would refuse or misread: no partitions, a
// partition twice, no replicas, a broker twice, log_dirs not matching.
func (p Plan) Check() error {
	if p.Version != 1 {
		return fmt.Errorf("version %d (want 1)", p.Version)
	}
	if len(p.Partitions) == 0 {
		return fmt.Errorf("the plan lists no partitions")
	}
	seen := map[string]bool{}
	for _, pp := range p.Partitions {
		name := fmt.Sprintf("%s-%d", pp.Topic, pp.Partition)
		switch {
		case pp.Topic == "" || pp.Partition < 0:
			return fmt.Errorf("entry %+v: want a topic and a partition (0 or more)", pp)
		case seen[name]:
			return fmt.Errorf("%s is listed twice", name)
		case len(pp.Replicas) == 0:
			return fmt.Errorf("%s has no replicas", name)
		case len(pp.LogDirs) > 0 && len(pp.LogDirs) != len(pp.Replicas):
			return fmt.Errorf("%s has %d replicas but %d log_dirs", name, len(pp.Replicas), len(pp.LogDirs))
		}
		seen[name] = true
		for i, b := range pp.Replicas {
			if b < 0 {
				return fmt.Errorf("%s: replica %d is not a broker id", name, b)
			}
			if slices.Contains(pp.Replicas[:i], b) {
				return fmt.Errorf("%s lists broker %d twice", name, b)
			}
		}
	}
	return nil
}

// Write prints the plan as kafka-reassign-partitions.sh writes it, sorted.
func (p Plan) Write(w io.Writer) error {
	p.sort()
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func (p *Plan) sort() {
	sort.Slice(p.Partitions, func(i, j int) bool {
		a, b := p.Partitions[i], p.Partitions[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
}

// Assignment is partitions' replicas: topic -> partition -> replicas.
type Assignment map[string]map[int32][]int32

// Plan lists the assignment as a plan.
func (a Assignment) Plan() Plan {
	p := Plan{Version: 1, Partitions: []PlanPartition{}}
	for t, ps := range a {
		for part, rs := range ps {
			p.Partitions = append(p.Partitions, PlanPartition{Topic: t, Partition: part, Replicas: slices.Clone(rs)})
		}
	}
	p.sort()
	return p
}
