package assignor

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Balancer adapts a to franz-go's kgo.GroupBalancer, so that a kgo consumer
// group can use any Assignor, including one served by a plugin, with
// kgo.Balancers(assignor.Balancer(a)). Members speak Kafka's consumer
// protocol (ConsumerMemberMetadata and ConsumerMemberAssignment), so they
// share a group with Java, librdkafka and kgo members using the same
// protocol name.
func Balancer(a Assignor) kgo.GroupBalancer { return balancer{a: a} }

type balancer struct{ a Assignor }

func (b balancer) ProtocolName() string { return b.a.Name() }
func (b balancer) IsCooperative() bool  { return b.a.Cooperative() }

// JoinGroupMetadata writes ConsumerMemberMetadata v3. Owned partitions are
// listed only for cooperative assignors: an eager member has revoked
// everything by the time it joins, and says so, as Java members do; eager
// sticky carries its previous assignment in its user data instead.
func (b balancer) JoinGroupMetadata(topics []string, current map[string][]int32, generation int32) []byte {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 3
	meta.Topics = topics
	meta.UserData = b.a.UserData(current, generation)
	meta.Generation = generation
	if b.a.Cooperative() {
		for _, topic := range sortedTopics(current) {
			op := kmsg.NewConsumerMemberMetadataOwnedPartition()
			op.Topic = topic
			op.Partitions = slices.Clone(current[topic])
			slices.Sort(op.Partitions)
			meta.OwnedPartitions = append(meta.OwnedPartitions, op)
		}
	}
	return meta.AppendTo(nil)
}

func (balancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	return kgo.ParseConsumerSyncAssignment(assignment)
}

// MemberBalancer decodes every member's metadata. A broker that lists a
// member ID twice gets the first listing used, rather than a failed
// rebalance.
func (b balancer) MemberBalancer(joined []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	members := make([]Member, 0, len(joined))
	seen := make(map[string]struct{}, len(joined))
	topics := make(map[string]struct{})
	for _, jm := range joined {
		if _, dup := seen[jm.MemberID]; dup {
			continue
		}
		seen[jm.MemberID] = struct{}{}
		instance := ""
		if jm.InstanceID != nil {
			instance = *jm.InstanceID
		}
		m, err := DecodeMember(jm.MemberID, instance, jm.ProtocolMetadata)
		if err != nil {
			return nil, nil, err
		}
		for _, t := range m.Topics {
			topics[t] = struct{}{}
		}
		members = append(members, m)
	}
	return &memberBalancer{a: b.a, members: members}, topics, nil
}

// DecodeMember builds a Member from a JoinGroup member's metadata, a
// ConsumerMemberMetadata of version 0 to 3. Owned partitions come from the
// metadata (v1+); when it lists none, they come from sticky user data if
// the user data is that, since eager sticky members carry them there.
func DecodeMember(memberID, instanceID string, metadata []byte) (Member, error) {
	var meta kmsg.ConsumerMemberMetadata
	if err := meta.ReadFrom(metadata); err != nil {
		// Some clients announce v1 without writing owned partitions;
		// read such metadata as the v0 it is.
		if !bytes.HasPrefix(metadata, []byte{0, 1}) {
			return Member{}, fmt.Errorf("member %q: invalid consumer protocol metadata: %w", memberID, err)
		}
		v0 := append([]byte{0, 0}, metadata[2:]...)
		if err := meta.ReadFrom(v0); err != nil {
			return Member{}, fmt.Errorf("member %q: invalid consumer protocol metadata: %w", memberID, err)
		}
	}
	m := Member{
		ID:         memberID,
		InstanceID: instanceID,
		Topics:     meta.Topics,
		UserData:   meta.UserData,
		Generation: meta.Generation,
	}
	for _, op := range meta.OwnedPartitions {
		if m.Owned == nil {
			m.Owned = make(map[string][]int32, len(meta.OwnedPartitions))
		}
		m.Owned[op.Topic] = append(m.Owned[op.Topic], op.Partitions...)
	}
	if len(m.Owned) == 0 && len(m.UserData) > 0 {
		if owned, gen, err := DecodeStickyUserData(m.UserData); err == nil && len(owned) > 0 {
			m.Owned, m.Generation = owned, gen
		}
	}
	return m, nil
}

type memberBalancer struct {
	a       Assignor
	members []Member
}

// Balance is BalanceOrError without the error, for callers that only know
// kgo.GroupMemberBalancer; kgo itself calls BalanceOrError. If assigning
// fails, every member is assigned nothing.
func (mb *memberBalancer) Balance(topics map[string]int32) kgo.IntoSyncAssignment {
	plan, err := mb.BalanceOrError(topics)
	if err != nil {
		return syncPlan{members: mb.members}
	}
	return plan
}

func (mb *memberBalancer) BalanceOrError(topics map[string]int32) (kgo.IntoSyncAssignment, error) {
	a, err := mb.a.Assign(mb.members, topics)
	if err != nil {
		return nil, fmt.Errorf("%s assignor: %w", mb.a.Name(), err)
	}
	known := make(map[string]struct{}, len(mb.members))
	for _, m := range mb.members {
		known[m.ID] = struct{}{}
	}
	for id := range a {
		if _, ok := known[id]; !ok {
			return nil, fmt.Errorf("%s assignor assigned partitions to %q, which is not a group member", mb.a.Name(), id)
		}
	}
	return syncPlan{members: mb.members, assignment: a}, nil
}

// syncPlan encodes an Assignment as ConsumerMemberAssignment v0, one per
// member (members given nothing get an empty assignment), ordered by member,
// topic and partition.
type syncPlan struct {
	members    []Member
	assignment Assignment
}

func (p syncPlan) IntoSyncAssignment() []kmsg.SyncGroupRequestGroupAssignment {
	out := make([]kmsg.SyncGroupRequestGroupAssignment, 0, len(p.members))
	for _, m := range p.members {
		var ca kmsg.ConsumerMemberAssignment
		topics := p.assignment[m.ID]
		for _, topic := range sortedTopics(topics) {
			at := kmsg.NewConsumerMemberAssignmentTopic()
			at.Topic = topic
			at.Partitions = slices.Clone(topics[topic])
			slices.Sort(at.Partitions)
			ca.Topics = append(ca.Topics, at)
		}
		sa := kmsg.NewSyncGroupRequestGroupAssignment()
		sa.MemberID = m.ID
		sa.MemberAssignment = ca.AppendTo(nil)
		out = append(out, sa)
	}
	slices.SortFunc(out, func(a, b kmsg.SyncGroupRequestGroupAssignment) int { return javaCompare(a.MemberID, b.MemberID) })
	return out
}
