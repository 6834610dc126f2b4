package broker

// DeleteGroups, key 42, v0-v2.
//
// Deletes empty groups and their offsets (tombstones in __consumer_offsets);
// NON_EMPTY_GROUP while a group has members, GROUP_ID_NOT_FOUND for unknown groups.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/acl"
)

func init() { register(42, 0, 2, handleDeleteGroups) }

func handleDeleteGroups(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.DeleteGroupsRequest)
	// Authorization: DELETE on each group.
	var denied []string
	req.Groups, denied = splitGroups(b, rc, acl.OpDelete, req.Groups)
	b.groups.DeleteGroups(rc.ctx, req, func(resp *kmsg.DeleteGroupsResponse) {
		for _, g := range denied {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, rg)
		}
		respond(protocol.Response{Msg: resp})
	})
}
