package broker

// DeleteGroups, key 42, v0-v2.
//
// Deletes empty groups and their offsets (tombstones in __consumer_offsets);
// NON_EMPTY_GROUP while a group has members, GROUP_ID_NOT_FOUND for unknown groups.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
)

func init() { register(42, 0, 2, handleDeleteGroups) }

func handleDeleteGroups(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.DeleteGroupsRequest)
	b.groups.DeleteGroups(rc.ctx, req, func(resp *kmsg.DeleteGroupsResponse) { respond(protocol.Response{Msg: resp}) })
}
