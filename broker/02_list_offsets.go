package broker

// ListOffsets, key 2, v0-v7.
//
// Timestamp -2 is the log start offset, -1 the latest offset a consumer can read
// (the high watermark; with isolation_level 1, read_committed, the last stable
// offset, which also bounds the other lookups), -3 the offset of the record with the largest timestamp
// (KIP-734); any other timestamp finds the first batch whose records reach it, through
// the time index. Answered by the leader only; current_leader_epoch is checked (KIP-320).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/acl"
)

func init() { register(2, 0, 7, handleListOffsets) }

func handleListOffsets(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		// Authorization: DESCRIBE on each topic.
		describe := rc.allowed(b, acl.OpDescribe, acl.ResourceTopic, t.Topic)
		for _, rp := range t.Partitions {
			out := kmsg.NewListOffsetsResponseTopicPartition()
			out.Partition = rp.Partition
			out.Timestamp, out.Offset, out.LeaderEpoch = -1, -1, -1
			if !describe {
				out.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, out)
				continue
			}
			offset, ts, epoch, err := b.listOffset(t.Topic, rp, req.ReplicaID, req.IsolationLevel == 1)
			if err != nil {
				out.ErrorCode = errorCode(err)
			} else {
				out.Offset, out.Timestamp, out.LeaderEpoch = offset, ts, epoch
				if req.GetVersion() == 0 {
					out.OldStyleOffsets = []int64{offset}
				}
			}
			rt.Partitions = append(rt.Partitions, out)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	respond(protocol.Response{Msg: resp})
}

func (b *Broker) listOffset(topic string, rp kmsg.ListOffsetsRequestTopicPartition, replicaID int32, readCommitted bool) (int64, int64, int32, error) {
	p, err := b.leaderPartition(topic, rp.Partition)
	if err != nil {
		return 0, 0, 0, err
	}
	st := p.State()
	if rp.CurrentLeaderEpoch >= 0 {
		if rp.CurrentLeaderEpoch < st.LeaderEpoch {
			return 0, 0, 0, kerr.FencedLeaderEpoch
		}
		if rp.CurrentLeaderEpoch > st.LeaderEpoch {
			return 0, 0, 0, kerr.UnknownLeaderEpoch
		}
	}
	l := p.Log()
	hw := l.HighWatermark()
	if readCommitted {
		hw = min(hw, l.LastStableOffset())
	}
	switch rp.Timestamp {
	case -2:
		return l.LogStartOffset(), -1, st.LeaderEpoch, nil
	case -1:
		if replicaID == -2 { // debug replica: the log end offset
			return l.LogEndOffset(), -1, st.LeaderEpoch, nil
		}
		return hw, -1, st.LeaderEpoch, nil
	case -3:
		off, ts := l.MaxTimestamp()
		if off < 0 || off >= hw {
			return -1, -1, -1, nil
		}
		return off, ts, -1, nil
	}
	off, ts, epoch, ok := l.OffsetForTimestamp(rp.Timestamp)
	if !ok || off >= hw {
		return -1, -1, -1, nil
	}
	return off, ts, epoch, nil
}
