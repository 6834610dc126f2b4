package broker

// OffsetDelete, key 47, v0 (KIP-496).
//
// Deletes committed offsets of an empty group, or of topics a consumer group's
// members do not subscribe to (GROUP_SUBSCRIBED_TO_TOPIC otherwise).

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
)

func init() { register(47, 0, 0, handleOffsetDelete) }

func handleOffsetDelete(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.OffsetDeleteRequest)
	b.groups.OffsetDelete(rc.ctx, req, func(resp *kmsg.OffsetDeleteResponse) { respond(protocol.Response{Msg: resp}) })
}
