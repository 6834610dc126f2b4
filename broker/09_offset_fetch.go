package broker

// OffsetFetch, key 9, v0-v8 (v8 batches groups, KIP-709).
//
// Committed offsets from the group coordinator: -1 for a partition with none,
// every committed offset when no topics are named (v2+), the leader epoch from v5.
// v0 reads the same offsets as later versions (Kafka kept v0's in ZooKeeper).

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
)

func init() { register(9, 0, 8, handleOffsetFetch) }

func handleOffsetFetch(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.OffsetFetchRequest)
	b.groups.OffsetFetch(rc.ctx, req, func(resp *kmsg.OffsetFetchResponse) {
		authorizeOffsetFetch(b, rc, req, resp)
		respond(protocol.Response{Msg: resp})
	})
}
