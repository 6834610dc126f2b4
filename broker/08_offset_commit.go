package broker

// OffsetCommit, key 8, v0-v8.
//
// Partitions of topics this broker does not know get UNKNOWN_TOPIC_OR_PARTITION,
// as in Kafka; the rest go to the group coordinator, which answers once the
// offsets are in __consumer_offsets with acks=all. Members commit with their
// generation; a group without members also takes generation -1 commits (tools,
// self-assigning consumers). v0 commits go to the log like the others (Kafka kept
// v0's in ZooKeeper).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/acl"
)

func init() { register(8, 0, 8, handleOffsetCommit) }

func handleOffsetCommit(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.OffsetCommitRequest)
	// Authorization (KafkaApis.handleOffsetCommitRequest): READ on the group
	// for the whole request, READ on each topic for its partitions.
	groupDenied := !rc.allowed(b, acl.OpRead, acl.ResourceGroup, req.Group)
	known := *req
	var unknown map[string]map[int32]int16
	known.Topics, unknown = splitCommit(b, req.Topics,
		func(t kmsg.OffsetCommitRequestTopic) (string, []int32) {
			return t.Topic, partitionIDs(t.Partitions, func(p kmsg.OffsetCommitRequestTopicPartition) int32 { return p.Partition })
		},
		func(t kmsg.OffsetCommitRequestTopic, keep func(int32) bool) kmsg.OffsetCommitRequestTopic {
			t.Partitions = slices.DeleteFunc(slices.Clone(t.Partitions), func(p kmsg.OffsetCommitRequestTopicPartition) bool { return !keep(p.Partition) })
			return t
		},
		func(topic string) int16 {
			switch {
			case groupDenied:
				return kerr.GroupAuthorizationFailed.Code
			case !rc.allowed(b, acl.OpRead, acl.ResourceTopic, topic):
				return kerr.TopicAuthorizationFailed.Code
			}
			return 0
		})
	if len(unknown) == 0 {
		b.groups.OffsetCommit(rc.ctx, req, func(resp *kmsg.OffsetCommitResponse) { respond(protocol.Response{Msg: resp}) })
		return
	}
	answer := func(codes map[string]map[int32]int16) {
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = commitCode(unknown, codes, t.Topic, p.Partition)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		respond(protocol.Response{Msg: resp})
	}
	if len(known.Topics) == 0 {
		answer(nil)
		return
	}
	b.groups.OffsetCommit(rc.ctx, &known, func(resp *kmsg.OffsetCommitResponse) {
		codes := map[string]map[int32]int16{}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				setCode(codes, t.Topic, p.Partition, p.ErrorCode)
			}
		}
		answer(codes)
	})
}

// splitCommit separates the partitions of an (Txn)OffsetCommit answered here
// (refused by denied, 0 when allowed, or unknown to the metadata:
// UNKNOWN_TOPIC_OR_PARTITION) from those for the group coordinator: it
// returns the topics keeping only those, and the codes of the others.
func splitCommit[T any](b *Broker, topics []T, parts func(T) (string, []int32), keep func(T, func(int32) bool) T, denied func(string) int16) ([]T, map[string]map[int32]int16) {
	var known []T
	answered := map[string]map[int32]int16{}
	for _, t := range topics {
		topic, ps := parts(t)
		code := denied(topic)
		ok := map[int32]bool{}
		for _, p := range ps {
			if _, exists := b.meta.partition(topic, p); exists && code == 0 {
				ok[p] = true
			} else if code == 0 {
				setCode(answered, topic, p, kerr.UnknownTopicOrPartition.Code)
			} else {
				setCode(answered, topic, p, code)
			}
		}
		if len(ok) > 0 {
			known = append(known, keep(t, func(p int32) bool { return ok[p] }))
		}
	}
	return known, answered
}

func partitionIDs[P any](ps []P, id func(P) int32) []int32 {
	out := make([]int32, len(ps))
	for i, p := range ps {
		out[i] = id(p)
	}
	return out
}

func setCode(m map[string]map[int32]int16, topic string, p int32, code int16) {
	if m[topic] == nil {
		m[topic] = map[int32]int16{}
	}
	m[topic][p] = code
}

// commitCode is a partition's answer: the code given here, else the coordinator's.
func commitCode(answered, codes map[string]map[int32]int16, topic string, p int32) int16 {
	if c, ok := answered[topic][p]; ok {
		return c
	}
	return codes[topic][p]
}
