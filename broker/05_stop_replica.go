package broker

// StopReplica, key 5, v0-v3 (inter-broker, sent by the controller).
//
// Stops following partitions (controlled shutdown of this broker, reassignment)
// and, with delete set, removes their logs (topic deletion). Only the store's
// controller is obeyed, and a log is deleted only when the store no longer
// assigns it here (controller_check.go).

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/broker/replica"
)

func init() { register(5, 0, 3, handleStopReplica) }

func handleStopReplica(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.StopReplicaRequest)
	resp := req.ResponseKind().(*kmsg.StopReplicaResponse)
	refuse := func(err error) {
		b.refuseControllerRequest(rc, err, resp, func(c int16) { resp.ErrorCode = c }, respond)
	}
	trusted, err := b.fenceControllerRequest(rc.ctx, req.ControllerID, req.ControllerEpoch, epochIf(req.GetVersion(), 1, req.BrokerEpoch), true, &req.UnknownTags)
	if err != nil {
		refuse(err)
		return
	}
	topics := newTopicsInStore(b)
	var fatal error
	stop := func(topic string, p int32, del bool) {
		tp := replica.TP{Topic: topic, Partition: p}
		rp := kmsg.NewStopReplicaResponsePartition()
		rp.Topic, rp.Partition = topic, p
		if err := validateTopicName(topic); err != nil {
			rp.ErrorCode = errorCode(err)
			resp.Partitions = append(resp.Partitions, rp)
			return
		}
		var refusal, err error
		switch {
		case trusted:
		case del:
			refusal, err = b.verifyStopDelete(rc.ctx, topics, tp)
		default:
			refusal, err = b.verifyStopFollow(rc.ctx, tp)
		}
		if err != nil {
			fatal = err
			return
		}
		if refusal != nil {
			b.logger.Warn("refusing a StopReplica the store does not back", "partition", tp.String(), "delete", del, "err", refusal)
			rp.ErrorCode = errorCode(refusal)
			resp.Partitions = append(resp.Partitions, rp)
			return
		}
		err = b.replicas.StopReplica(req.ControllerEpoch, tp, del)
		if del && err == nil {
			b.incarnations.forget(tp)
		}
		b.onStopReplica(tp)
		if del {
			b.forgetTopicOverrides(topic)
		}
		rp.ErrorCode = errorCode(err)
		if err != nil {
			b.logger.Error("stop replica", "partition", tp.String(), "delete", del, "err", err)
		}
		resp.Partitions = append(resp.Partitions, rp)
	}
	for _, t := range req.Topics {
		if fatal != nil {
			break
		}
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
	if fatal != nil {
		refuse(fatal)
		return
	}
	respond(protocol.Response{Msg: resp})
}
