package group

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Group is one described consumer group. Field names in JSON and YAML are
// part of ktool's stable output (see tools/README-fields.md).
type Group struct {
	Group        string     `json:"group" yaml:"group"`
	State        string     `json:"state" yaml:"state"`
	ProtocolType string     `json:"protocol_type" yaml:"protocol_type"`
	Protocol     string     `json:"protocol" yaml:"protocol"`
	Coordinator  int32      `json:"coordinator" yaml:"coordinator"`
	Members      []Member   `json:"members" yaml:"members"`
	Offsets      []Offset   `json:"offsets" yaml:"offsets"`
	TopicLag     []TopicLag `json:"topic_lag" yaml:"topic_lag"`
	TotalLag     int64      `json:"total_lag" yaml:"total_lag"`
	// Isolation is what the lag is measured against: read_uncommitted (the
	// high watermark) or read_committed (the last stable offset).
	Isolation string `json:"isolation" yaml:"isolation"`
}

// Member is one member of a group.
type Member struct {
	MemberID     string            `json:"member_id" yaml:"member_id"`
	InstanceID   string            `json:"instance_id" yaml:"instance_id"`
	ClientID     string            `json:"client_id" yaml:"client_id"`
	Host         string            `json:"host" yaml:"host"`
	Subscription []string          `json:"subscription" yaml:"subscription"`
	Assigned     []TopicPartitions `json:"assigned" yaml:"assigned"`
}

// TopicPartitions lists partitions of one topic.
type TopicPartitions struct {
	Topic      string  `json:"topic" yaml:"topic"`
	Partitions []int32 `json:"partitions" yaml:"partitions"`
}

// Offset is a partition the group consumes or has committed to: the
// committed offset, the log's end, and the lag between them.
type Offset struct {
	Topic     string `json:"topic" yaml:"topic"`
	Partition int32  `json:"partition" yaml:"partition"`
	Committed int64  `json:"committed_offset" yaml:"committed_offset"`
	LogStart  int64  `json:"log_start_offset" yaml:"log_start_offset"`
	LogEnd    int64  `json:"log_end_offset" yaml:"log_end_offset"`
	Lag       int64  `json:"lag" yaml:"lag"`
	MemberID  string `json:"member_id" yaml:"member_id"`
	ClientID  string `json:"client_id" yaml:"client_id"`
	Host      string `json:"host" yaml:"host"`
	Error     string `json:"error,omitempty" yaml:"error,omitempty"`
}

// TopicLag is the lag of a group summed over the partitions of one topic.
type TopicLag struct {
	Topic string `json:"topic" yaml:"topic"`
	Lag   int64  `json:"lag" yaml:"lag"`
}

// errNoGroup says a group does not exist.
func errNoGroup(name string) error {
	return fmt.Errorf("group %q does not exist (see `ktool group list`)", name)
}

// Isolation levels a lag is measured at.
const (
	ReadUncommitted = "read_uncommitted"
	ReadCommitted   = "read_committed"
)

// Load describes groups with their lag against the high watermark. A group
// the coordinator does not know is an error naming it.
func Load(ctx context.Context, adm *kadm.Client, names []string) ([]Group, error) {
	return LoadIsolated(ctx, adm, names, ReadUncommitted)
}

// LoadIsolated is Load with the lag of read_committed consumers measured
// against each partition's last stable offset, what such a consumer can
// reach (an open transaction holds it back), when isolation is ReadCommitted.
func LoadIsolated(ctx context.Context, adm *kadm.Client, names []string, isolation string) ([]Group, error) {
	groups, err := load(ctx, adm, names)
	if err != nil || isolation != ReadCommitted {
		return groups, err
	}
	topics := map[string]bool{}
	for _, g := range groups {
		for _, o := range g.Offsets {
			topics[o.Topic] = true
		}
	}
	stable := kadm.ListedOffsets{}
	if len(topics) > 0 {
		if stable, err = adm.ListCommittedOffsets(ctx, slices.Sorted(maps.Keys(topics))...); err != nil {
			return nil, fmt.Errorf("listing last stable offsets: %w", err)
		}
	}
	for i := range groups {
		measureAgainst(&groups[i], stable)
	}
	return groups, nil
}

// measureAgainst recomputes a group's lag against ends (last stable offsets).
func measureAgainst(g *Group, ends kadm.ListedOffsets) {
	g.Isolation = ReadCommitted
	g.TopicLag, g.TotalLag = []TopicLag{}, 0
	byTopic := map[string]int64{}
	for i := range g.Offsets {
		o := &g.Offsets[i]
		e, ok := ends.Lookup(o.Topic, o.Partition)
		switch {
		case !ok || e.Err != nil:
			o.LogEnd, o.Lag = -1, -1
			if ok {
				o.Error = e.Err.Error()
			}
		case o.Committed >= 0:
			o.LogEnd, o.Lag = e.Offset, max(e.Offset-o.Committed, 0)
		case o.LogStart >= 0:
			o.LogEnd, o.Lag = e.Offset, max(e.Offset-o.LogStart, 0)
		default:
			o.LogEnd, o.Lag = e.Offset, -1
		}
		byTopic[o.Topic] += max(o.Lag, 0)
	}
	for _, topic := range slices.Sorted(maps.Keys(byTopic)) {
		g.TopicLag = append(g.TopicLag, TopicLag{Topic: topic, Lag: byTopic[topic]})
		g.TotalLag += byTopic[topic]
	}
}

func load(ctx context.Context, adm *kadm.Client, names []string) ([]Group, error) {
	lags, err := adm.Lag(ctx, names...)
	if err != nil {
		return nil, err
	}
	out := make([]Group, 0, len(names))
	for _, name := range names {
		l, ok := lags[name]
		if !ok {
			return nil, fmt.Errorf("group %q: the cluster did not describe it", name)
		}
		if errors.Is(l.DescribeErr, kerr.GroupIDNotFound) {
			return nil, errNoGroup(name)
		}
		if err := l.Error(); err != nil {
			return nil, fmt.Errorf("describing group %q: %w", name, err)
		}
		g := fromLag(l)
		if g.State == "Dead" && len(g.Members) == 0 && len(g.Offsets) == 0 {
			return nil, errNoGroup(name)
		}
		out = append(out, g)
	}
	return out, nil
}

func fromLag(l kadm.DescribedGroupLag) Group {
	g := Group{
		Group:        l.Group,
		State:        l.State,
		ProtocolType: l.ProtocolType,
		Protocol:     l.Protocol,
		Coordinator:  l.Coordinator.NodeID,
		Members:      []Member{},
		Offsets:      []Offset{},
		TopicLag:     []TopicLag{},
		Isolation:    ReadUncommitted,
	}
	for _, m := range l.Members {
		g.Members = append(g.Members, fromMember(m))
	}
	lagByTopic := map[string]int64{}
	for _, ml := range l.Lag.Sorted() {
		// Some coordinators answer an OffsetFetch for every partition of
		// a topic, with -1 where nothing was committed; such a partition
		// is neither consumed nor committed by the group.
		if ml.Member == nil && ml.Commit.At < 0 && ml.Err == nil {
			continue
		}
		o := Offset{
			Topic:     ml.Topic,
			Partition: ml.Partition,
			Committed: ml.Commit.At,
			LogStart:  -1,
			LogEnd:    -1,
			Lag:       ml.Lag,
		}
		if ml.Start.Err == nil {
			o.LogStart = ml.Start.Offset
		}
		if ml.End.Err == nil {
			o.LogEnd = ml.End.Offset
		}
		if ml.Member != nil {
			o.MemberID, o.ClientID, o.Host = ml.Member.MemberID, ml.Member.ClientID, ml.Member.ClientHost
		}
		if ml.Err != nil {
			o.Error = ml.Err.Error()
		}
		g.Offsets = append(g.Offsets, o)
		lagByTopic[o.Topic] += max(o.Lag, 0)
	}
	for _, topic := range slices.Sorted(maps.Keys(l.Lag)) {
		lag, ok := lagByTopic[topic]
		if !ok && len(l.Lag[topic]) > 0 {
			continue
		}
		g.TopicLag = append(g.TopicLag, TopicLag{Topic: topic, Lag: lag})
		g.TotalLag += lag
	}
	return g
}

func fromMember(m kadm.DescribedGroupMember) Member {
	out := Member{
		MemberID:     m.MemberID,
		ClientID:     m.ClientID,
		Host:         m.ClientHost,
		Subscription: []string{},
		Assigned:     []TopicPartitions{},
	}
	if m.InstanceID != nil {
		out.InstanceID = *m.InstanceID
	}
	if j, ok := m.Join.AsConsumer(); ok {
		out.Subscription = append(out.Subscription, j.Topics...)
		slices.Sort(out.Subscription)
		out.Subscription = slices.Compact(out.Subscription)
	}
	if a, ok := m.Assigned.AsConsumer(); ok {
		for _, t := range a.Topics {
			ps := append([]int32{}, t.Partitions...)
			slices.Sort(ps)
			out.Assigned = append(out.Assigned, TopicPartitions{Topic: t.Topic, Partitions: ps})
		}
		sort.Slice(out.Assigned, func(i, j int) bool { return out.Assigned[i].Topic < out.Assigned[j].Topic })
	}
	return out
}
