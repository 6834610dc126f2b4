package broker

// DescribeGroups, key 15, v0-v5.
//
// State, protocol and members of groups this broker coordinates; member metadata
// and assignments only for a Stable group, and an unknown group is "Dead", as
// Kafka answers. Authorized operations (v3+) are all group operations: there are
// no ACLs.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
)

func init() { register(15, 0, 5, handleDescribeGroups) }

func handleDescribeGroups(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.DescribeGroupsRequest)
	// A group listed many times is described once: each answer carries every
	// member's metadata and assignment.
	req.Groups = dedupe(req.Groups, func(g string) string { return g })
	b.groups.DescribeGroups(rc.ctx, req, func(resp *kmsg.DescribeGroupsResponse) { respond(protocol.Response{Msg: resp}) })
}
