package broker

// DeleteTopics, key 20, v0-v6.
//
// Marks topics for deletion under /admin/delete_topics, as Kafka does; the
// controller stops and deletes every replica (waiting for offline replicas to
// return), then removes the topic's znodes. The answer waits (up to timeout_ms)
// until the topic has left the metadata. Topic ids (v6) are resolved by name.

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/acl"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

func init() { register(20, 0, 6, handleDeleteTopics) }

func handleDeleteTopics(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	go func() {
		ctx, cancel := context.WithTimeout(rc.ctx, max(adminTimeout(req.TimeoutMillis), 1))
		defer cancel()
		names := req.TopicNames
		ids := make([][16]byte, len(names))
		for _, t := range req.Topics {
			name := ""
			if t.Topic != nil {
				name = *t.Topic
			} else {
				name = b.topicNameByID(t.TopicID)
			}
			names = append(names, name)
			ids = append(ids, t.TopicID)
		}
		var deleting []string
		dups := duplicates(names, func(n string) string { return n })
		answered := map[string]bool{}
		for i, name := range names {
			if answered[name] {
				continue
			}
			answered[name] = true
			rt := kmsg.NewDeleteTopicsResponseTopic()
			n := name
			rt.Topic = &n
			rt.TopicID = ids[i]
			var err error
			switch {
			case dups[name] > 1:
				err = fmt.Errorf("%w: topic %s is listed more than once", kerr.InvalidRequest, name)
			case !rc.allowed(b, acl.OpDelete, acl.ResourceTopic, name):
				// Authorization: DELETE on each topic.
				err = fmt.Errorf("%w: DELETE on topic %s is required", kerr.TopicAuthorizationFailed, name)
			default:
				err = b.markForDeletion(ctx, name)
			}
			if err != nil {
				rt.ErrorCode = errorCode(err)
				msg := err.Error()
				rt.ErrorMessage = &msg
			} else {
				deleting = append(deleting, name)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		if err := b.waitTopics(ctx, deleting, true); err != nil {
			for i := range resp.Topics {
				if t := resp.Topics[i].Topic; t != nil && contains(deleting, *t) {
					if _, _, _, ok := b.meta.topic(*t); ok {
						resp.Topics[i].ErrorCode = kerr.RequestTimedOut.Code
					}
				}
			}
		}
		respond(protocol.Response{Msg: resp})
	}()
}

func (b *Broker) markForDeletion(ctx context.Context, topic string) error {
	if topic == "" {
		return kerr.UnknownTopicID
	}
	if err := validateTopicName(topic); err != nil {
		return err // the name would become a znode path
	}
	if !b.cfg.Settings().DeleteTopicEnable {
		return kerr.TopicDeletionDisabled
	}
	if internalTopic(topic) {
		return kerr.InvalidTopicException
	}
	s := b.Store()
	if ok, _, err := s.Exists(ctx, zkdata.TopicPath(topic)); err != nil {
		return err
	} else if !ok {
		return kerr.UnknownTopicOrPartition
	}
	if _, err := s.CreateAll(ctx, zkdata.DeleteTopicPath(topic), nil, coord.Persistent); err != nil && !errors.Is(err, coord.ErrNodeExists) {
		return err
	}
	b.logger.Info("topic marked for deletion", "topic", topic)
	return nil
}

func (b *Broker) topicNameByID(id [16]byte) string {
	if id == ([16]byte{}) {
		return "" // the zero id names no topic (UNKNOWN_TOPIC_ID)
	}
	for _, t := range b.meta.topicNames() {
		if _, _, tid, ok := b.meta.topic(t); ok && tid == id {
			return t
		}
	}
	return ""
}
