package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/broker/txn"
	"github.com/ktoolhq/ktool/internal/acl"
)

// txnErrorCode is the Kafka error code of a coordinator error; PRODUCER_FENCED
// is INVALID_PRODUCER_EPOCH to clients older than KIP-588 (fencedBelow is the
// first request version that knows it).
func txnErrorCode(err error, version, fencedBelow int16) int16 {
	if err == nil {
		return 0
	}
	if errors.Is(err, kerr.ProducerFenced) && version < fencedBelow {
		return kerr.InvalidProducerEpoch.Code
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return kerr.RequestTimedOut.Code
	}
	return kerr.UnknownServerError.Code
}

// initTransactional is InitProducerId with a transactional id.
func initTransactional(b *Broker, rc *reqCtx, req *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse, respond func(protocol.Response)) {
	id := *req.TransactionalID
	switch {
	case !rc.allowed(b, acl.OpWrite, acl.ResourceTransactionalID, id):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
	case id == "":
		resp.ErrorCode = kerr.InvalidRequest.Code
	}
	if resp.ErrorCode != 0 {
		respond(protocol.Response{Msg: resp})
		return
	}
	r := txn.InitRequest{TimeoutMs: req.TransactionTimeoutMillis, ProducerID: -1, ProducerEpoch: -1}
	if req.GetVersion() >= 3 {
		r.ProducerID, r.ProducerEpoch = req.ProducerID, req.ProducerEpoch
	}
	go func() {
		pid, epoch, err := b.txns.InitProducerID(rc.ctx, id, r)
		resp.ProducerID, resp.ProducerEpoch = pid, epoch
		resp.ErrorCode = txnErrorCode(err, req.GetVersion(), 4)
		if resp.ErrorCode == kerr.UnknownServerError.Code && !errors.As(err, new(*kerr.Error)) {
			b.logger.Warn("InitProducerId failed", "transactional_id", id, "err", err)
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		}
		respond(protocol.Response{Msg: resp})
	}()
}
