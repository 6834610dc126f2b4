package group

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// TopicSpec is one --topic argument: a topic alone (every partition) or
// T:P,P,... as kafka-consumer-groups.sh takes it.
type TopicSpec struct {
	Topic      string
	Partitions []int32 // nil: every partition
}

// ParseTopicSpec parses T or T:P[,P...].
func ParseTopicSpec(s string) (TopicSpec, error) {
	name, parts, hasParts := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if name == "" {
		return TopicSpec{}, fmt.Errorf("--topic %q: want TOPIC or TOPIC:PARTITION[,PARTITION...]", s)
	}
	spec := TopicSpec{Topic: name}
	if !hasParts {
		return spec, nil
	}
	for _, p := range strings.Split(parts, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		if err != nil || n < 0 {
			return TopicSpec{}, fmt.Errorf("--topic %q: partition %q is not a number from 0 up", s, p)
		}
		if !slices.Contains(spec.Partitions, int32(n)) {
			spec.Partitions = append(spec.Partitions, int32(n))
		}
	}
	slices.Sort(spec.Partitions)
	return spec, nil
}

// parseTopicSpecs parses every --topic value, merging repeats of one topic.
func parseTopicSpecs(in []string) ([]TopicSpec, error) {
	var out []TopicSpec
	for _, s := range in {
		spec, err := ParseTopicSpec(s)
		if err != nil {
			return nil, cmdutil.UsageError(err)
		}
		i := slices.IndexFunc(out, func(o TopicSpec) bool { return o.Topic == spec.Topic })
		switch {
		case i < 0:
			out = append(out, spec)
		case out[i].Partitions == nil || spec.Partitions == nil:
			out[i].Partitions = nil
		default:
			for _, p := range spec.Partitions {
				if !slices.Contains(out[i].Partitions, p) {
					out[i].Partitions = append(out[i].Partitions, p)
				}
			}
			slices.Sort(out[i].Partitions)
		}
	}
	return out, nil
}

// resolveTopics checks the specs against the cluster's metadata and fills in
// "every partition" for the topics named alone.
func resolveTopics(ctx context.Context, f *cmdutil.Factory, adm *kadm.Client, specs []TopicSpec) (kadm.TopicsSet, error) {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Topic
	}
	m, err := cmdutil.Metadata(ctx, adm, names...)
	if err != nil {
		return nil, f.ClusterError("reading metadata", err)
	}
	set := kadm.TopicsSet{}
	for _, s := range specs {
		td, ok := m.Topics[s.Topic]
		if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
			return nil, fmt.Errorf("topic %q does not exist (see `ktool topic list`)", s.Topic)
		}
		if td.Err != nil {
			return nil, fmt.Errorf("topic %q: %w", s.Topic, td.Err)
		}
		parts := s.Partitions
		if parts == nil {
			parts = td.Partitions.Numbers()
		}
		for _, p := range parts {
			if _, ok := td.Partitions[p]; !ok {
				return nil, cmdutil.Usagef("topic %q has no partition %d (it has %d)", s.Topic, p, len(td.Partitions))
			}
		}
		set.Add(s.Topic, parts...)
	}
	return set, nil
}
