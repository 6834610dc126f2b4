package broker

// ListPartitionReassignments, key 46, v0 (KIP-455).
//
// In-progress reassignments with their replicas, adding and removing replicas,
// from the controller (forwarded by other brokers). Null topics lists them all.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/controller"
	"github.com/ktoolhq/ktool/broker/protocol"
)

func init() { register(46, 0, 0, handleListPartitionReassignments) }

var errNotController = kerr.NotController

func handleListPartitionReassignments(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.ListPartitionReassignmentsRequest)
	go func() {
		ctx, cancel := context.WithTimeout(rc.ctx, max(adminTimeout(req.TimeoutMillis), 30*time.Second))
		defer cancel()
		resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
		c := b.ctrl.active()
		if c == nil {
			if fwd, err := b.forwardToController(ctx, req); err == nil {
				respond(protocol.Response{Msg: fwd})
				return
			}
			resp.ErrorCode = errNotController.Code
			respond(protocol.Response{Msg: resp})
			return
		}
		var tps []controller.TP
		if req.Topics != nil {
			tps = []controller.TP{}
			for _, t := range req.Topics {
				for _, p := range t.Partitions {
					tps = append(tps, controller.TP{Topic: t.Topic, Partition: p})
				}
			}
		}
		list, err := c.ListReassignments(ctx, tps)
		if err != nil {
			resp.ErrorCode = errorCode(err)
			respond(protocol.Response{Msg: resp})
			return
		}
		idx := map[string]int{}
		for _, tp := range sortedReassignTPs(list) {
			ra := list[tp]
			i, ok := idx[tp.Topic]
			if !ok {
				rt := kmsg.NewListPartitionReassignmentsResponseTopic()
				rt.Topic = tp.Topic
				resp.Topics = append(resp.Topics, rt)
				i = len(resp.Topics) - 1
				idx[tp.Topic] = i
			}
			rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			rp.Partition, rp.Replicas, rp.AddingReplicas, rp.RemovingReplicas = tp.Partition, ra.Replicas, ra.Adding, ra.Removing
			resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
		}
		respond(protocol.Response{Msg: resp})
	}()
}

func sortedReassignTPs(m map[controller.TP]controller.Reassignment) []controller.TP {
	errs := make(map[controller.TP]error, len(m))
	for tp := range m {
		errs[tp] = nil
	}
	return sortedTPs(errs)
}
