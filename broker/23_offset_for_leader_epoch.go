package broker

// OffsetForLeaderEpoch, key 23, v0-v4 (KIP-101, KIP-279, KIP-320).
//
// For a leader epoch, the largest epoch at or below it that this leader knows and
// the offset where that epoch ended. Followers use it to truncate after a leader
// change; consumers (KIP-320) to detect log truncation. Both get the same answer
// (see replica.Partition.LastOffsetForLeaderEpoch).

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
)

func init() { register(23, 0, 4, handleOffsetForLeaderEpoch) }

func handleOffsetForLeaderEpoch(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, rp := range t.Partitions {
			out := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			out.Partition = rp.Partition
			out.LeaderEpoch, out.EndOffset = -1, -1
			p, err := b.leaderPartition(t.Topic, rp.Partition)
			if err == nil {
				out.LeaderEpoch, out.EndOffset, err = p.LastOffsetForLeaderEpoch(rp.CurrentLeaderEpoch, rp.LeaderEpoch)
			}
			out.ErrorCode = errorCode(err)
			rt.Partitions = append(rt.Partitions, out)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	respond(protocol.Response{Msg: resp})
}
