package broker

// DeleteRecords, key 21, v0-v2.
//
// Moves a partition's log start offset forward (checkpointed; whole segments
// below it are deleted). Offset -1 means the high watermark. Only the leader
// answers; followers learn the new start offset from their fetch responses.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/acl"
)

func init() { register(21, 0, 2, handleDeleteRecords) }

func handleDeleteRecords(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		// Authorization: DELETE on each topic.
		del := rc.allowed(b, acl.OpDelete, acl.ResourceTopic, t.Topic)
		for _, rp := range t.Partitions {
			out := kmsg.NewDeleteRecordsResponseTopicPartition()
			out.Partition = rp.Partition
			out.LowWatermark = -1
			p, err := b.leaderPartition(t.Topic, rp.Partition)
			if !del {
				err = kerr.TopicAuthorizationFailed
			}
			if err == nil {
				l := p.Log()
				off := rp.Offset
				if off == -1 {
					off = l.HighWatermark()
				}
				if off < 0 || off > l.HighWatermark() {
					err = kerr.OffsetOutOfRange
				} else {
					out.LowWatermark, err = l.DeleteRecordsBefore(off)
				}
			}
			out.ErrorCode = errorCode(err)
			rt.Partitions = append(rt.Partitions, out)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	respond(protocol.Response{Msg: resp})
}
