package broker

// LeaveGroup, key 13, v0-v4.
//
// Removes members (one before v3, a batch by member id or group.instance.id from
// v3) and rebalances the rest.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/acl"
)

func init() { register(13, 0, 4, handleLeaveGroup) }

func handleLeaveGroup(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.LeaveGroupRequest)
	if !rc.allowed(b, acl.OpRead, acl.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		respond(protocol.Response{Msg: resp})
		return
	}
	b.groups.LeaveGroup(rc.ctx, req, func(resp *kmsg.LeaveGroupResponse) { respond(protocol.Response{Msg: resp}) })
}
