package broker

// ListGroups, key 16, v0-v4.
//
// The groups this broker coordinates, with their protocol type and (v4, KIP-518)
// state, filtered by the requested states.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
)

func init() { register(16, 0, 4, handleListGroups) }

func handleListGroups(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.ListGroupsRequest)
	b.groups.ListGroups(rc.ctx, req, func(resp *kmsg.ListGroupsResponse) { respond(protocol.Response{Msg: resp}) })
}
