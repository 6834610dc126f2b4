package broker

// SyncGroup, key 14, v0-v5.
//
// The leader's request carries the assignment; it is written to __consumer_offsets
// (acks=all) and then every member's SyncGroup is answered with its part.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/acl"
)

func init() { register(14, 0, 5, handleSyncGroup) }

func handleSyncGroup(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.SyncGroupRequest)
	if !rc.allowed(b, acl.OpRead, acl.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		respond(protocol.Response{Msg: resp})
		return
	}
	b.groups.SyncGroup(rc.ctx, req, func(resp *kmsg.SyncGroupResponse) { respond(protocol.Response{Msg: resp}) })
}
