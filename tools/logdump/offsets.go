package logdump

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Decoded is a __consumer_offsets record read with the group coordinator's
// schemas (key versions 0 and 1: a committed offset; 2: a group's metadata).
// Value is nil for a tombstone: the offset or group was deleted.
type Decoded struct {
	Kind  string `json:"kind" yaml:"kind"` // offset_commit, group_metadata or unknown
	Key   any    `json:"key,omitempty" yaml:"key,omitempty"`
	Value any    `json:"value,omitempty" yaml:"value,omitempty"`
	Error string `json:"error,omitempty" yaml:"error,omitempty"`
}

// OffsetKey is the key of a committed offset.
type OffsetKey struct {
	Version   int16  `json:"version" yaml:"version"`
	Group     string `json:"group" yaml:"group"`
	Topic     string `json:"topic" yaml:"topic"`
	Partition int32  `json:"partition" yaml:"partition"`
}

// OffsetValue is a committed offset.
type OffsetValue struct {
	Version         int16  `json:"version" yaml:"version"`
	Offset          int64  `json:"offset" yaml:"offset"`
	LeaderEpoch     int32  `json:"leader_epoch" yaml:"leader_epoch"`
	Metadata        string `json:"metadata" yaml:"metadata"`
	CommitTimestamp int64  `json:"commit_timestamp" yaml:"commit_timestamp"`
	ExpireTimestamp int64  `json:"expire_timestamp,omitempty" yaml:"expire_timestamp,omitempty"`
}

// GroupKey is the key of a group's metadata.
type GroupKey struct {
	Version int16  `json:"version" yaml:"version"`
	Group   string `json:"group" yaml:"group"`
}

// GroupValue is a group's metadata as the coordinator stores it after a rebalance.
type GroupValue struct {
	Version               int16         `json:"version" yaml:"version"`
	ProtocolType          string        `json:"protocol_type" yaml:"protocol_type"`
	Generation            int32         `json:"generation" yaml:"generation"`
	Protocol              string        `json:"protocol" yaml:"protocol"`
	Leader                string        `json:"leader" yaml:"leader"`
	CurrentStateTimestamp int64         `json:"current_state_timestamp" yaml:"current_state_timestamp"`
	Members               []GroupMember `json:"members" yaml:"members"`
}

// GroupMember is one member; for consumer groups the subscription and
// assignment are decoded too.
type GroupMember struct {
	MemberID           string   `json:"member_id" yaml:"member_id"`
	InstanceID         string   `json:"group_instance_id,omitempty" yaml:"group_instance_id,omitempty"`
	ClientID           string   `json:"client_id" yaml:"client_id"`
	ClientHost         string   `json:"client_host" yaml:"client_host"`
	RebalanceTimeoutMs int32    `json:"rebalance_timeout_ms" yaml:"rebalance_timeout_ms"`
	SessionTimeoutMs   int32    `json:"session_timeout_ms" yaml:"session_timeout_ms"`
	Subscription       []string `json:"subscription,omitempty" yaml:"subscription,omitempty"`
	Assignment         []string `json:"assignment,omitempty" yaml:"assignment,omitempty"`
}

// decodeOffsetsRecord decodes one __consumer_offsets record. It never fails:
// what it cannot read it says in Error.
func decodeOffsetsRecord(key, value []byte) *Decoded {
	if len(key) < 2 {
		return &Decoded{Kind: "unknown", Error: "key shorter than its version"}
	}
	switch v := int16(binary.BigEndian.Uint16(key)); v {
	case 0, 1:
		d := &Decoded{Kind: "offset_commit"}
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			d.Error = fmt.Sprintf("key: %v", err)
			return d
		}
		d.Key = OffsetKey{Version: k.Version, Group: k.Group, Topic: k.Topic, Partition: k.Partition}
		if value == nil {
			return d
		}
		var val kmsg.OffsetCommitValue
		if err := val.ReadFrom(value); err != nil {
			d.Error = fmt.Sprintf("value: %v", err)
			return d
		}
		d.Value = OffsetValue{Version: val.Version, Offset: val.Offset, LeaderEpoch: val.LeaderEpoch, Metadata: val.Metadata,
			CommitTimestamp: val.CommitTimestamp, ExpireTimestamp: val.ExpireTimestamp}
		return d
	case 2:
		d := &Decoded{Kind: "group_metadata"}
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			d.Error = fmt.Sprintf("key: %v", err)
			return d
		}
		d.Key = GroupKey{Version: k.Version, Group: k.Group}
		if value == nil {
			return d
		}
		var val kmsg.GroupMetadataValue
		if err := val.ReadFrom(value); err != nil {
			d.Error = fmt.Sprintf("value: %v", err)
			return d
		}
		gv := GroupValue{Version: val.Version, ProtocolType: val.ProtocolType, Generation: val.Generation,
			Protocol: deref(val.Protocol), Leader: deref(val.Leader), CurrentStateTimestamp: val.CurrentStateTimestamp,
			Members: []GroupMember{}}
		for _, m := range val.Members {
			gm := GroupMember{MemberID: m.MemberID, InstanceID: deref(m.InstanceID), ClientID: m.ClientID, ClientHost: m.ClientHost,
				RebalanceTimeoutMs: m.RebalanceTimeoutMillis, SessionTimeoutMs: m.SessionTimeoutMillis}
			if val.ProtocolType == "consumer" {
				var sub kmsg.ConsumerMemberMetadata
				if sub.ReadFrom(m.Subscription) == nil {
					gm.Subscription = sub.Topics
				}
				var asg kmsg.ConsumerMemberAssignment
				if asg.ReadFrom(m.Assignment) == nil {
					for _, t := range asg.Topics {
						ps := append([]int32(nil), t.Partitions...)
						sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
						gm.Assignment = append(gm.Assignment, fmt.Sprintf("%s:%s", t.Topic, joinInt32(ps)))
					}
				}
			}
			gv.Members = append(gv.Members, gm)
		}
		d.Value = gv
		return d
	default:
		return &Decoded{Kind: "unknown", Error: fmt.Sprintf("key version %d is neither an offset (0, 1) nor group metadata (2)", v)}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func joinInt32(xs []int32) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(x)
	}
	return s
}
