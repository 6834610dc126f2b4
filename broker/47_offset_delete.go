package broker

// OffsetDelete, key 47, v0 (KIP-496).
//
// Deletes committed offsets of an empty group, or of topics a consumer group's
// members do not subscribe to (GROUP_SUBSCRIBED_TO_TOPIC otherwise).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/acl"
)

func init() { register(47, 0, 0, handleOffsetDelete) }

func handleOffsetDelete(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.OffsetDeleteRequest)
	// Authorization: DELETE on the group, READ on each topic.
	if !rc.allowed(b, acl.OpDelete, acl.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		respond(protocol.Response{Msg: resp})
		return
	}
	refused := authorizeOffsetDelete(b, rc, req)
	b.groups.OffsetDelete(rc.ctx, req, func(resp *kmsg.OffsetDeleteResponse) {
		resp.Topics = append(resp.Topics, refused...)
		respond(protocol.Response{Msg: resp})
	})
}
