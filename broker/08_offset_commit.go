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
	unknown := map[string]map[int32]int16{} // partitions answered here, with their error
	known := *req
	known.Topics = nil
	for _, t := range req.Topics {
		kt := t
		kt.Partitions = nil
		code := int16(0)
		switch {
		case groupDenied:
			code = kerr.GroupAuthorizationFailed.Code
		case !rc.allowed(b, acl.OpRead, acl.ResourceTopic, t.Topic):
			code = kerr.TopicAuthorizationFailed.Code
		}
		for _, p := range t.Partitions {
			if _, ok := b.meta.partition(t.Topic, p.Partition); ok && code == 0 {
				kt.Partitions = append(kt.Partitions, p)
				continue
			}
			if unknown[t.Topic] == nil {
				unknown[t.Topic] = map[int32]int16{}
			}
			if code == 0 {
				unknown[t.Topic][p.Partition] = kerr.UnknownTopicOrPartition.Code
			} else {
				unknown[t.Topic][p.Partition] = code
			}
		}
		if len(kt.Partitions) > 0 {
			known.Topics = append(known.Topics, kt)
		}
	}
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
				if c, ok := unknown[t.Topic][p.Partition]; ok {
					rp.ErrorCode = c
				} else {
					rp.ErrorCode = codes[t.Topic][p.Partition]
				}
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
			if codes[t.Topic] == nil {
				codes[t.Topic] = map[int32]int16{}
			}
			for _, p := range t.Partitions {
				codes[t.Topic][p.Partition] = p.ErrorCode
			}
		}
		answer(codes)
	})
}
