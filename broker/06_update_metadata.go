package broker

// UpdateMetadata, key 6, v0-v7 (inter-broker, sent by the controller).
//
// Replaces this broker's metadata cache with the controller's view: live brokers
// and the leader, epoch, AR, ISR and offline replicas of every partition.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
)

func init() { register(6, 0, 7, handleUpdateMetadata) }

func handleUpdateMetadata(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.UpdateMetadataRequest)
	resp := req.ResponseKind().(*kmsg.UpdateMetadataResponse)
	if err := b.fenceControllerRequest(epochIf(req.GetVersion(), 5, req.BrokerEpoch), req.ControllerEpoch, true); err != nil {
		resp.ErrorCode = errorCode(err)
		respond(protocol.Response{Msg: resp})
		return
	}
	if deleted := b.meta.apply(req); len(deleted) > 0 {
		// The controller leaves deleted topics out of its view.
		b.groups.TopicsDeleted(deleted)
	}
	respond(protocol.Response{Msg: resp})
}
