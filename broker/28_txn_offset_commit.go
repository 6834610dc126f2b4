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
	answered := map[string]map[int32]int16{} // partitions answered here, with their error
	known := *req
	known.Topics = nil
	for _, t := range req.Topics {
		kt := t
		kt.Partitions = nil
		code := denied
		if code == 0 && !rc.allowed(b, acl.OpRead, acl.ResourceTopic, t.Topic) {
			code = kerr.TopicAuthorizationFailed.Code
		}
		for _, p := range t.Partitions {
			if _, ok := b.meta.partition(t.Topic, p.Partition); ok && code == 0 {
				kt.Partitions = append(kt.Partitions, p)
				continue
			}
			if answered[t.Topic] == nil {
				answered[t.Topic] = map[int32]int16{}
			}
			if code == 0 {
				answered[t.Topic][p.Partition] = kerr.UnknownTopicOrPartition.Code
			} else {
				answered[t.Topic][p.Partition] = code
			}
		}
		if len(kt.Partitions) > 0 {
			known.Topics = append(known.Topics, kt)
		}
	}
	answer := func(codes map[string]map[int32]int16) {
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition = p.Partition
				if c, ok := answered[t.Topic][p.Partition]; ok {
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
	b.groups.TxnOffsetCommit(rc.ctx, &known, func(resp *kmsg.TxnOffsetCommitResponse) {
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
