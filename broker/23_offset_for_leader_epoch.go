package broker

// OffsetForLeaderEpoch, key 23, v0-v4 (KIP-101, KIP-279, KIP-320).
//
// For a leader epoch, the largest epoch at or below it that this leader knows and
// the offset where that epoch ended. Followers use it to truncate after a leader
// change; consumers (KIP-320) to detect log truncation.

import (
	"github.com/twmb/franz-go/pkg/kerr"
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
			if err == nil && rp.CurrentLeaderEpoch >= 0 {
				cur := p.State().LeaderEpoch
				if rp.CurrentLeaderEpoch < cur {
					err = kerr.FencedLeaderEpoch
				} else if rp.CurrentLeaderEpoch > cur {
					err = kerr.UnknownLeaderEpoch
				}
			}
			if err == nil {
				l := p.Log()
				out.LeaderEpoch, out.EndOffset = l.EndOffsetForEpoch(rp.LeaderEpoch)
				if req.ReplicaID < 0 && out.EndOffset > l.HighWatermark() {
					// Consumers only learn of committed offsets.
					out.EndOffset = l.HighWatermark()
				}
			}
			out.ErrorCode = errorCode(err)
			rt.Partitions = append(rt.Partitions, out)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	respond(protocol.Response{Msg: resp})
}
