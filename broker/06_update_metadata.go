package broker

// UpdateMetadata, key 6, v0-v7 (inter-broker, sent by the controller).
//
// Updates this broker's metadata cache with the controller's view: live brokers
// and the leader, epoch, AR, ISR and offline replicas of partitions. A
// controller's first UpdateMetadata to this registration of the broker is its
// full view and replaces the cache; later ones carry only the partitions that
// changed, a partition with leader -2 being dropped (metadata_cache.go). Only
// the store's controller is obeyed; brokers not registered as named are left out,
// and a topic is dropped only once the store has (controller_check.go).

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
)

func init() { register(6, 0, 7, handleUpdateMetadata) }

func handleUpdateMetadata(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.UpdateMetadataRequest)
	resp := req.ResponseKind().(*kmsg.UpdateMetadataResponse)
	refuse := func(err error) {
		b.refuseControllerRequest(rc, err, resp, func(c int16) { resp.ErrorCode = c }, respond)
	}
	trusted, err := b.fenceControllerRequest(rc.ctx, req.ControllerID, req.ControllerEpoch, epochIf(req.GetVersion(), 5, req.BrokerEpoch), true, &req.UnknownTags)
	if err != nil {
		refuse(err)
		return
	}
	if err := b.verifyUpdateMetadata(rc.ctx, req, trusted); err != nil {
		refuse(err)
		return
	}
	if deleted := b.meta.apply(req); len(deleted) > 0 {
		// The controller leaves deleted topics out of its view.
		b.groups.TopicsDeleted(deleted)
		b.replicas.TopicsDeleted(deleted)
	}
	respond(protocol.Response{Msg: resp})
}
