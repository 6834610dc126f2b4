package broker

// Heartbeat, key 12, v0-v4.
//
// Keeps a member's session alive; REBALANCE_IN_PROGRESS tells it to rejoin,
// ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID fence stale members.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/acl"
)

func init() { register(12, 0, 4, handleHeartbeat) }

func handleHeartbeat(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.HeartbeatRequest)
	if !rc.allowed(b, acl.OpRead, acl.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		respond(protocol.Response{Msg: resp})
		return
	}
	b.groups.Heartbeat(rc.ctx, req, func(resp *kmsg.HeartbeatResponse) { respond(protocol.Response{Msg: resp}) })
}
