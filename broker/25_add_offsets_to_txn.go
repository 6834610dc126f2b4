package broker

// AddOffsetsToTxn, key 25, v0-v3 (v3 flexible).
//
// Adds the group's __consumer_offsets partition to the producer's transaction,
// so the group's TxnOffsetCommits are committed or aborted by its marker.
// TransactionalId WRITE (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and Group READ
// (GROUP_AUTHORIZATION_FAILED) are required, as in Kafka; PRODUCER_FENCED is
// INVALID_PRODUCER_EPOCH below v2.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/broker/txn"
	"github.com/ktoolhq/ktool/internal/acl"
)

func init() { register(25, 0, 3, handleAddOffsetsToTxn) }

func handleAddOffsetsToTxn(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	switch {
	case !rc.allowed(b, acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
	case !rc.allowed(b, acl.OpRead, acl.ResourceGroup, req.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	case req.TransactionalID == "" || req.Group == "":
		resp.ErrorCode = kerr.InvalidRequest.Code
	}
	if resp.ErrorCode != 0 {
		respond(protocol.Response{Msg: resp})
		return
	}
	tp := txn.TP{Topic: offsetsTopic, Partition: b.groups.PartitionFor(req.Group)}
	go func() {
		err := b.txns.AddPartitions(rc.ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, []txn.TP{tp})
		resp.ErrorCode = txnErrorCode(err, req.GetVersion(), 2)
		respond(protocol.Response{Msg: resp})
	}()
}
