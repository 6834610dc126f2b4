package broker

// AlterPartitionReassignments, key 45, v0 (KIP-455).
//
// Starts or cancels (null replicas) partition reassignments. The controller runs
// them with Kafka's algorithm: add the new replicas, wait until they are in the
// ISR, move the leader into the target set, then remove the old replicas. A broker
// that is not the controller forwards the request.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/controller"
	"github.com/ktoolhq/ktool/broker/protocol"
)

func init() { register(45, 0, 0, handleAlterPartitionReassignments) }

func handleAlterPartitionReassignments(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.AlterPartitionAssignmentsRequest)
	go func() {
		ctx, cancel := context.WithTimeout(rc.ctx, max(adminTimeout(req.TimeoutMillis), 30*time.Second))
		defer cancel()
		resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
		c := b.ctrl.active()
		if c == nil {
			if fwd, err := b.forwardToController(ctx, req); err == nil {
				respond(protocol.Response{Msg: fwd})
				return
			}
			resp.ErrorCode = errorCode(errNotController)
			respond(protocol.Response{Msg: resp})
			return
		}
		reqs := map[controller.TP][]int32{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				reqs[controller.TP{Topic: t.Topic, Partition: p.Partition}] = p.Replicas
			}
		}
		results, err := c.AlterReassignments(ctx, reqs)
		if err != nil {
			resp.ErrorCode = errorCode(err)
			respond(protocol.Response{Msg: resp})
			return
		}
		for _, t := range req.Topics {
			rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				rp.Partition = p.Partition
				if e := results[controller.TP{Topic: t.Topic, Partition: p.Partition}]; e != nil {
					rp.ErrorCode = errorCode(e)
					msg := e.Error()
					rp.ErrorMessage = &msg
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		respond(protocol.Response{Msg: resp})
	}()
}
