package election

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
)

// Target is one partition to elect a leader for.
type Target struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// ParseJSON reads kafka-leader-election.sh's --path-to-json-file format:
// {"partitions":[{"topic":"t","partition":0},...]}.
func ParseJSON(r io.Reader) ([]Target, error) {
	var doc struct {
		Partitions *[]struct {
			Topic     *string `json:"topic"`
			Partition *int32  `json:"partition"`
		} `json:"partitions"`
	}
	dec := json.NewDecoder(r)
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if doc.Partitions == nil {
		return nil, fmt.Errorf(`no "partitions" list (want {"partitions":[{"topic":"t","partition":0}]})`)
	}
	seen := map[Target]bool{}
	var out []Target
	for i, p := range *doc.Partitions {
		if p.Topic == nil || *p.Topic == "" || p.Partition == nil || *p.Partition < 0 {
			return nil, fmt.Errorf("entry %d needs a topic and a partition number >= 0", i)
		}
		t := Target{Topic: *p.Topic, Partition: *p.Partition}
		if seen[t] {
			return nil, fmt.Errorf("partition %s-%d is listed twice", t.Topic, t.Partition)
		}
		seen[t] = true
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf(`the "partitions" list is empty`)
	}
	sortTargets(out)
	return out, nil
}

func sortTargets(ts []Target) {
	sort.Slice(ts, func(i, j int) bool {
		if ts[i].Topic != ts[j].Topic {
			return ts[i].Topic < ts[j].Topic
		}
		return ts[i].Partition < ts[j].Partition
	})
}
