package broker

// EndTxn, key 26, v0-v3 (v3 flexible).
//
// Commits or aborts the producer's transaction: the coordinator writes
// PrepareCommit or PrepareAbort and answers; the markers and the Complete
// state follow (requests meanwhile get CONCURRENT_TRANSACTIONS). A retried
// EndTxn of a transaction that already ended the same way succeeds.
// TransactionalId WRITE is required; PRODUCER_FENCED is INVALID_PRODUCER_EPOCH
// below v2.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/acl"
)

func init() { register(26, 0, 3, handleEndTxn) }

func handleEndTxn(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	switch {
	case !rc.allowed(b, acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
	case req.TransactionalID == "":
		resp.ErrorCode = kerr.InvalidRequest.Code
	}
	if resp.ErrorCode != 0 {
		respond(protocol.Response{Msg: resp})
		return
	}
	go func() {
		err := b.txns.EndTxn(rc.ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
		resp.ErrorCode = txnErrorCode(err, req.GetVersion(), 2)
		respond(protocol.Response{Msg: resp})
	}()
}
