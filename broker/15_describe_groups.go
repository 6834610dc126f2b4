package broker

// DescribeGroups, key 15, v0-v5.
//
// State, protocol and members of groups this broker coordinates; member metadata
// and assignments only for a Stable group, and an unknown group is "Dead", as
// Kafka answers. A group the principal may not DESCRIBE is
// GROUP_AUTHORIZATION_FAILED. Authorized operations (v3+) are the group
// operations (READ, DELETE, DESCRIBE) the authorizer allows, all without one.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/acl"
)

func init() { register(15, 0, 5, handleDescribeGroups) }

func handleDescribeGroups(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.DescribeGroupsRequest)
	// A group listed many times is described once: each answer carries every
	// member's metadata and assignment.
	req.Groups = dedupe(req.Groups, func(g string) string { return g })
	// Authorization: DESCRIBE on each group.
	var denied []string
	req.Groups, denied = splitGroups(b, rc, acl.OpDescribe, req.Groups)
	b.groups.DescribeGroups(rc.ctx, req, func(resp *kmsg.DescribeGroupsResponse) {
		if req.IncludeAuthorizedOperations && b.authz != nil {
			for i := range resp.Groups {
				resp.Groups[i].AuthorizedOperations = rc.authorizedOps(b, acl.ResourceGroup, resp.Groups[i].Group)
			}
		}
		for _, g := range denied {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, rg)
		}
		respond(protocol.Response{Msg: resp})
	})
}
