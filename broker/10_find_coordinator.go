package broker

// FindCoordinator, key 10, v0-v4 (v4 batches keys, KIP-699).
//
// The coordinator of group G is the leader of __consumer_offsets partition
// abs(javaHashCode(G)) mod offsets.topic.num.partitions, as in Kafka. The topic is
// created on first use; until it and that partition's leader are known the answer
// is COORDINATOR_NOT_AVAILABLE (node -1), which clients retry. A transactional
// id (key type 1) is served the same way by the leader of __transaction_state
// partition abs(javaHashCode(id)) mod its partitions, the topic created on first
// use too; an empty transactional id is INVALID_REQUEST. Other key types are
// INVALID_REQUEST.

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
	topic, ensure := offsetsTopic, b.ensureOffsetsTopic
	switch req.CoordinatorType {
	case 0:
	case 1:
		topic, ensure = txnTopic, b.ensureTxnTopic
	default:
		answer()
		return
	}
	if _, _, _, ok := b.meta.topic(topic); ok {
		answer()
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(rc.ctx, offsetsTopicWait)
		defer cancel()
		if err := ensure(ctx); err != nil {
			b.logger.Warn("creating "+topic+" failed", "error", err)
		} else if err := b.waitTopics(ctx, []string{topic}, false); err != nil {
			b.logger.Info("waiting for "+topic+" leaders", "error", err)
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
	var p partitionMeta
	var ok bool
	switch keyType {
	case 0:
		p, ok = b.meta.partition(offsetsTopic, b.groups.PartitionFor(key))
	case 1:
		if key == "" {
			return fail(kerr.InvalidRequest, "empty transactional id")
		}
		p, ok = b.meta.partition(txnTopic, b.txns.PartitionFor(key))
	default:
		return fail(kerr.InvalidRequest, "unknown coordinator type")
	}
	if !ok || p.Leader < 0 {
		return fail(kerr.CoordinatorNotAvailable, "the coordinator is not available yet")
	}
	ep, ok := b.meta.broker(p.Leader)
	if !ok {
		return fail(kerr.CoordinatorNotAvailable, "the coordinator is not available yet")
	}
	hp, ok := ep.on(listener)
	if !ok {
		return fail(kerr.CoordinatorNotAvailable, "the coordinator has no listener "+listener)
	}
	c.NodeID, c.Host, c.Port = ep.ID, hp.Host, hp.Port
	return c
}
