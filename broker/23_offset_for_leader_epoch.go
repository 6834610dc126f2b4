package broker

// OffsetForLeaderEpoch, key 23, v0-v4 (KIP-101, KIP-279, KIP-320).
//
// For a leader epoch, the largest epoch at or below it that this leader knows and
// the offset where that epoch ended. Followers use it to truncate after a leader
// change; consumers (KIP-320) to detect log truncation. Both get the same answer
// (see replica.Partition.LastOffsetForLeaderEpoch).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/broker/replica"
	"github.com/ktoolhq/ktool/internal/acl"
)

func init() { register(23, 0, 4, handleOffsetForLeaderEpoch) }

func handleOffsetForLeaderEpoch(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.OffsetForLeaderEpochRequest)
	if req.ReplicaID < 0 || !b.leaderEpochAhead(req) {
		respond(protocol.Response{Msg: answerOffsetForLeaderEpoch(b, rc, req)})
		return
	}
	// A follower asks about an epoch this broker has not taken yet: wait for
	// the LeaderAndIsr on its way here, up to replica.fetch.wait.max.ms.
	go func() {
		ctx, cancel := context.WithTimeout(rc.ctx, b.replicaFetchWait())
		defer cancel()
		for _, t := range req.Topics {
			for _, rp := range t.Partitions {
				b.replicas.AwaitLeaderEpoch(ctx, replica.TP{Topic: t.Topic, Partition: rp.Partition}, rp.CurrentLeaderEpoch)
			}
		}
		respond(protocol.Response{Msg: answerOffsetForLeaderEpoch(b, rc, req)})
	}()
}

// leaderEpochAhead reports whether a partition of req names a current leader
// epoch this broker has not reached.
func (b *Broker) leaderEpochAhead(req *kmsg.OffsetForLeaderEpochRequest) bool {
	for _, t := range req.Topics {
		for _, rp := range t.Partitions {
			if rp.CurrentLeaderEpoch < 0 {
				continue
			}
			p := b.replicas.Get(replica.TP{Topic: t.Topic, Partition: rp.Partition})
			if p == nil || p.State().LeaderEpoch < rp.CurrentLeaderEpoch {
				return true
			}
		}
	}
	return false
}

func answerOffsetForLeaderEpoch(b *Broker, rc *reqCtx, req *kmsg.OffsetForLeaderEpochRequest) *kmsg.OffsetForLeaderEpochResponse {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	// Authorization, as Kafka's for followers and consumers alike (KIP-320):
	// CLUSTER_ACTION on the cluster, or else DESCRIBE on each topic. The
	// answer is the same for both and changes nothing.
	clusterAction := rc.allowedCluster(b, acl.OpClusterAction)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		var denied error
		if !clusterAction && !rc.allowed(b, acl.OpDescribe, acl.ResourceTopic, t.Topic) {
			denied = kerr.TopicAuthorizationFailed
		}
		for _, rp := range t.Partitions {
			out := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			out.Partition = rp.Partition
			out.LeaderEpoch, out.EndOffset = -1, -1
			p, err := b.leaderPartition(t.Topic, rp.Partition)
			if denied != nil {
				err = denied
			}
			if err == nil {
				out.LeaderEpoch, out.EndOffset, err = p.LastOffsetForLeaderEpoch(rp.CurrentLeaderEpoch, rp.LeaderEpoch)
			}
			out.ErrorCode = errorCode(err)
			rt.Partitions = append(rt.Partitions, out)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// replicaFetchWait is replica.fetch.wait.max.ms, the longest a follower's
// question waits here for this broker to take the epoch it names.
func (b *Broker) replicaFetchWait() time.Duration {
	return b.cfg.Settings().ReplicaFetchWaitMax
}
