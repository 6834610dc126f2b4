package broker

// JoinGroup, key 11, v0-v7.
//
// Served by the group coordinator (broker/group): rebalances honour the members'
// rebalance timeouts and group.initial.rebalance.delay.ms for a new group, v4+
// dynamic members first get MEMBER_ID_REQUIRED with their id (KIP-394), v5+
// static members rejoin with group.instance.id (KIP-345), and the group settles on
// a protocol every member supports. The answer waits for the rebalance. The member
// records the request's client id and the client's address, as Kafka shows them.

import (
	"context"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/group"
	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/acl"
)

func init() { register(11, 0, 7, handleJoinGroup) }

func handleJoinGroup(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.JoinGroupRequest)
	if !rc.allowed(b, acl.OpRead, acl.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.Generation, resp.MemberID = kerr.GroupAuthorizationFailed.Code, -1, req.MemberID
		respond(protocol.Response{Msg: resp})
		return
	}
	b.groups.JoinGroup(clientContext(rc), req, func(resp *kmsg.JoinGroupResponse) { respond(protocol.Response{Msg: resp}) })
}

// clientContext carries the client id and host ("/ip", as Kafka writes it) to the coordinator.
func clientContext(rc *reqCtx) context.Context {
	host := ""
	if rc.conn != nil {
		addr := rc.conn.RemoteAddr().String()
		if h, _, err := net.SplitHostPort(addr); err == nil {
			addr = h
		}
		host = "/" + addr
	}
	return group.WithClient(rc.ctx, rc.header.ClientID, host)
}
