package broker

// FindCoordinator, key 10, v0-v4 (v4 batches keys, KIP-699).
//
// The coordinator of group G is the leader of __consumer_offsets partition
// abs(javaHashCode(G)) mod offsets.topic.num.partitions, as in Kafka. The topic is
// created on first use; until it and that partition's leader are known the answer
// is COORDINATOR_NOT_AVAILABLE (node -1), which clients retry. Transactional ids
// (key type 1) get TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as InitProducerId does:
// transactions are not supported, and the error is not retried. Other key types
// are INVALID_REQUEST.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
)

func init() { register(10, 0, 4, handleFindCoordinator) }

// offsetsTopicWait bounds how long a FindCoordinator that created
// __consumer_offsets waits for its leaders before answering.
const offsetsTopicWait = 5 * time.Second

func handleFindCoordinator(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.FindCoordinatorRequest)
	answer := func() {
		resp := b.findCoordinators(rc.identity.Listener, req)
		authorizeFindCoordinator(b, rc, req, resp)
		respond(protocol.Response{Msg: resp})
	}
	if _, _, _, ok := b.meta.topic(offsetsTopic); ok || req.CoordinatorType != 0 {
		answer()
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(rc.ctx, offsetsTopicWait)
		defer cancel()
		if err := b.ensureOffsetsTopic(ctx); err != nil {
			b.logger.Warn("creating "+offsetsTopic+" failed", "error", err)
		} else if err := b.waitTopics(ctx, []string{offsetsTopic}, false); err != nil {
			b.logger.Info("waiting for "+offsetsTopic+" leaders", "error", err)
		}
		answer()
	}()
}

func (b *Broker) findCoordinators(listener string, req *kmsg.FindCoordinatorRequest) *kmsg.FindCoordinatorResponse {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.GetVersion() < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		c := b.findCoordinator(listener, req.CoordinatorType, key)
		resp.Coordinators = append(resp.Coordinators, c)
	}
	if req.GetVersion() < 4 {
		c := resp.Coordinators[0]
		resp.Coordinators = nil
		resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
		resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
	}
	return resp
}

func (b *Broker) findCoordinator(listener string, keyType int8, key string) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Port = key, -1, -1
	fail := func(e *kerr.Error, msg string) kmsg.FindCoordinatorResponseCoordinator {
		c.ErrorCode, c.ErrorMessage = e.Code, &msg
		return c
	}
	switch keyType {
	case 0:
	case 1:
		return fail(kerr.TransactionalIDAuthorizationFailed, "transactions are not supported by this broker")
	default:
		return fail(kerr.InvalidRequest, "unknown coordinator type")
	}
	p, ok := b.meta.partition(offsetsTopic, b.groups.PartitionFor(key))
	if !ok || p.Leader < 0 {
		return fail(kerr.CoordinatorNotAvailable, "the group coordinator is not available yet")
	}
	ep, ok := b.meta.broker(p.Leader)
	if !ok {
		return fail(kerr.CoordinatorNotAvailable, "the group coordinator is not available yet")
	}
	hp, ok := ep.on(listener)
	if !ok {
		return fail(kerr.CoordinatorNotAvailable, "the group coordinator has no listener "+listener)
	}
	c.NodeID, c.Host, c.Port = ep.ID, hp.Host, hp.Port
	return c
}
