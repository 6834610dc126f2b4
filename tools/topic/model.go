package topic

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/replicastate"
)

// Topic is one described topic. Field names in JSON and YAML are part of
// ktool's stable output (see tools/README-fields.md).
type Topic struct {
	Name              string                   `json:"name" yaml:"name"`
	ID                string                   `json:"id" yaml:"id"`
	Internal          bool                     `json:"internal" yaml:"internal"`
	PartitionCount    int                      `json:"partition_count" yaml:"partition_count"`
	ReplicationFactor int                      `json:"replication_factor" yaml:"replication_factor"`
	MinInsyncReplicas int                      `json:"min_insync_replicas" yaml:"min_insync_replicas"`
	Overrides         []Config                 `json:"config_overrides" yaml:"config_overrides"`
	Partitions        []replicastate.Partition `json:"partitions" yaml:"partitions"`
	// Racks is the broker.rack of each broker holding a replica (by broker
	// id), when the brokers have racks.
	Racks map[int32]string `json:"racks,omitempty" yaml:"racks,omitempty"`
}

// Config is a topic config set on the topic itself, overriding the default.
type Config struct {
	Name  string `json:"name" yaml:"name"`
	Value string `json:"value" yaml:"value"`
}

// Load describes topics (all non-internal ones plus internal ones when
// internal is set, when names is empty): metadata, config overrides,
// min.insync.replicas and each partition's log start offset and high watermark.
func Load(ctx context.Context, adm *kadm.Client, names []string, internal bool) ([]Topic, error) {
	m, err := cmdutil.Metadata(ctx, adm, names...)
	if err != nil {
		return nil, err
	}
	live := replicastate.LiveBrokers(m)
	racks := map[int32]string{}
	for _, b := range m.Brokers {
		if b.Rack != nil && *b.Rack != "" {
			racks[b.NodeID] = *b.Rack
		}
	}
	var topics []Topic
	for _, td := range m.Topics.Sorted() {
		if td.Err != nil {
			if td.Err == kerr.UnknownTopicOrPartition {
				return nil, fmt.Errorf("topic %q does not exist (see `ktool topic list`)", td.Topic)
			}
			return nil, fmt.Errorf("describing topic %q: %w", td.Topic, td.Err)
		}
		if td.IsInternal && !internal && len(names) == 0 {
			continue
		}
		t := Topic{
			Name:              td.Topic,
			ID:                topicID(td.ID),
			Internal:          td.IsInternal,
			PartitionCount:    len(td.Partitions),
			ReplicationFactor: td.Partitions.NumReplicas(),
			MinInsyncReplicas: 1,
			Overrides:         []Config{},
			Partitions:        []replicastate.Partition{},
		}
		for _, pd := range td.Partitions.Sorted() {
			t.Partitions = append(t.Partitions, replicastate.FromMetadata(pd, live))
			for _, r := range pd.Replicas {
				if rack, ok := racks[r]; ok {
					if t.Racks == nil {
						t.Racks = map[int32]string{}
					}
					t.Racks[r] = rack
				}
			}
		}
		topics = append(topics, t)
	}
	if len(topics) == 0 {
		return topics, nil
	}
	if err := addConfigs(ctx, adm, topics); err != nil {
		return nil, err
	}
	if err := addOffsets(ctx, adm, topics); err != nil {
		return nil, err
	}
	return topics, nil
}

func addConfigs(ctx context.Context, adm *kadm.Client, topics []Topic) error {
	names := make([]string, len(topics))
	for i, t := range topics {
		names[i] = t.Name
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, names...)
	if err != nil {
		return fmt.Errorf("reading topic configs: %w", err)
	}
	byName := make(map[string]kadm.ResourceConfig, len(rcs))
	for _, rc := range rcs {
		byName[rc.Name] = rc
	}
	for i := range topics {
		rc, ok := byName[topics[i].Name]
		if !ok || rc.Err != nil {
			continue
		}
		for _, c := range rc.Configs {
			v := ""
			if c.Value != nil {
				v = *c.Value
			}
			if c.Key == "min.insync.replicas" {
				if n, err := strconv.Atoi(v); err == nil {
					topics[i].MinInsyncReplicas = n
				}
			}
			if c.Source == kmsg.ConfigSourceDynamicTopicConfig {
				if c.Sensitive {
					v = "(sensitive)"
				}
				topics[i].Overrides = append(topics[i].Overrides, Config{Name: c.Key, Value: v})
			}
		}
		slices.SortFunc(topics[i].Overrides, func(a, b Config) int {
			switch {
			case a.Name < b.Name:
				return -1
			case a.Name > b.Name:
				return 1
			}
			return 0
		})
	}
	return nil
}

func addOffsets(ctx context.Context, adm *kadm.Client, topics []Topic) error {
	names := make([]string, len(topics))
	for i, t := range topics {
		names[i] = t.Name
	}
	// Offsets are best effort: a partition whose leader is down has none,
	// and that must not hide the rest of the description.
	starts, err := adm.ListStartOffsets(ctx, names...)
	if err != nil && !isShardErrors(err) {
		return fmt.Errorf("listing log start offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, names...)
	if err != nil && !isShardErrors(err) {
		return fmt.Errorf("listing high watermarks: %w", err)
	}
	for i := range topics {
		for j := range topics[i].Partitions {
			p := &topics[i].Partitions[j]
			so, sok := starts.Lookup(topics[i].Name, p.Partition)
			eo, eok := ends.Lookup(topics[i].Name, p.Partition)
			if sok && so.Err == nil {
				p.LogStartOffset = so.Offset
			}
			if eok && eo.Err == nil {
				p.HighWatermark = eo.Offset
			}
			if p.Error != "" || p.Leader < 0 || (sok && so.Err == nil && eok && eo.Err == nil) {
				continue
			}
			switch {
			case sok && so.Err != nil:
				p.Error = fmt.Sprintf("offsets unavailable: leader %d answered %v", p.Leader, so.Err)
			case eok && eo.Err != nil:
				p.Error = fmt.Sprintf("offsets unavailable: leader %d answered %v", p.Leader, eo.Err)
			default:
				p.Error = fmt.Sprintf("offsets unavailable: leader %d did not answer", p.Leader)
			}
		}
	}
	return nil
}

func isShardErrors(err error) bool {
	var se *kadm.ShardErrors
	return errors.As(err, &se)
}

func topicID(id kadm.TopicID) string {
	if id == (kadm.TopicID{}) {
		return ""
	}
	// Kafka prints topic ids as unpadded URL-safe base64.
	return base64.RawURLEncoding.EncodeToString(id[:])
}
