package broker

// ListGroups, key 16, v0-v4.
//
// The groups this broker coordinates, with their protocol type and (v4, KIP-518)
// state, filtered by the requested states.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/acl"
)

func init() { register(16, 0, 4, handleListGroups) }

func handleListGroups(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.ListGroupsRequest)
	// Authorization: DESCRIBE on the cluster lists every group, else only the
	// groups the principal may DESCRIBE.
	all := rc.allowedCluster(b, acl.OpDescribe)
	b.groups.ListGroups(rc.ctx, req, func(resp *kmsg.ListGroupsResponse) {
		if !all {
			kept := resp.Groups[:0]
			for _, g := range resp.Groups {
				if rc.allowed(b, acl.OpDescribe, acl.ResourceGroup, g.Group) {
					kept = append(kept, g)
				}
			}
			resp.Groups = kept
		}
		respond(protocol.Response{Msg: resp})
	})
}
