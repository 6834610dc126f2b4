package broker

// StopReplica, key 5, v0-v3 (inter-broker, sent by the controller).
//
// Stops following partitions (controlled shutdown of this broker, reassignment)
// and, with delete set, removes their logs (topic deletion).

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/broker/replica"
)

func init() { register(5, 0, 3, handleStopReplica) }

func handleStopReplica(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.StopReplicaRequest)
	resp := req.ResponseKind().(*kmsg.StopReplicaResponse)
	if err := b.fenceControllerRequest(epochIf(req.GetVersion(), 1, req.BrokerEpoch), req.ControllerEpoch, true); err != nil {
		resp.ErrorCode = errorCode(err)
		respond(protocol.Response{Msg: resp})
		return
	}
	stop := func(topic string, p int32, del bool) {
		tp := replica.TP{Topic: topic, Partition: p}
		err := b.replicas.StopReplica(req.ControllerEpoch, tp, del)
		b.onStopReplica(tp)
		if del {
			b.forgetTopicOverrides(topic)
		}
		rp := kmsg.NewStopReplicaResponsePartition()
		rp.Topic, rp.Partition, rp.ErrorCode = topic, p, errorCode(err)
		if err != nil {
			b.logger.Error("stop replica", "partition", tp.String(), "delete", del, "err", err)
		}
		resp.Partitions = append(resp.Partitions, rp)
	}
	for _, t := range req.Topics {
		if req.GetVersion() >= 3 {
			for _, ps := range t.PartitionStates {
				stop(t.Topic, ps.Partition, ps.Delete)
			}
			continue
		}
		if req.GetVersion() == 0 {
			stop(t.Topic, t.Partition, req.DeletePartitions)
			continue
		}
		for _, p := range t.Partitions {
			stop(t.Topic, p, req.DeletePartitions)
		}
	}
	respond(protocol.Response{Msg: resp})
}
