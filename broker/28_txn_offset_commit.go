package broker

// TxnOffsetCommit, key 28, v0-v3 (v3 flexible, with the member and generation
// of KIP-447).
//
// A transactional producer commits a consumer group's offsets inside its
// transaction. Authorization as Kafka: WRITE on the transactional id, READ on
// the group, READ on each topic. Partitions of unknown topics get
// UNKNOWN_TOPIC_OR_PARTITION; the rest go to the group coordinator, which
// writes them as a transactional batch of the producer to __consumer_offsets
// and holds them pending until the transaction's marker (WriteTxnMarkers)
// commits or aborts them.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/acl"
)

func init() { register(28, 0, 3, handleTxnOffsetCommit) }

func handleTxnOffsetCommit(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.TxnOffsetCommitRequest)
	var denied int16
	switch {
	case !rc.allowed(b, acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID):
		denied = kerr.TransactionalIDAuthorizationFailed.Code
	case !rc.allowed(b, acl.OpRead, acl.ResourceGroup, req.Group):
		denied = kerr.GroupAuthorizationFailed.Code
	}
	known := *req
	var answered map[string]map[int32]int16
	known.Topics, answered = splitCommit(b, req.Topics,
		func(t kmsg.TxnOffsetCommitRequestTopic) (string, []int32) {
			return t.Topic, partitionIDs(t.Partitions, func(p kmsg.TxnOffsetCommitRequestTopicPartition) int32 { return p.Partition })
		},
		func(t kmsg.TxnOffsetCommitRequestTopic, keep func(int32) bool) kmsg.TxnOffsetCommitRequestTopic {
			t.Partitions = slices.DeleteFunc(slices.Clone(t.Partitions), func(p kmsg.TxnOffsetCommitRequestTopicPartition) bool { return !keep(p.Partition) })
			return t
		},
		func(topic string) int16 {
			if denied == 0 && !rc.allowed(b, acl.OpRead, acl.ResourceTopic, topic) {
				return kerr.TopicAuthorizationFailed.Code
			}
			return denied
		})
	answer := func(codes map[string]map[int32]int16) {
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = commitCode(answered, codes, t.Topic, p.Partition)
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
	b.groups.TxnOffsetCommit(rc.ctx, &known, func(resp *kmsg.TxnOffsetCommitResponse) {
		codes := map[string]map[int32]int16{}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				setCode(codes, t.Topic, p.Partition, p.ErrorCode)
			}
		}
		answer(codes)
	})
}
