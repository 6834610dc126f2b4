package broker

// CreateTopics, key 19, v0-v7.
//
// Any broker takes the request: it validates names, partition counts, replication
// factors (above the live broker count is INVALID_REPLICATION_FACTOR), explicit
// replica assignments and configs, writes the topic to the coordination store as
// Kafka's admin client does, and waits (up to timeout_ms) until the controller has
// elected leaders for every partition. validate_only checks without creating.

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/config"
	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/acl"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

func init() { register(19, 0, 7, handleCreateTopics) }

func handleCreateTopics(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	go func() {
		ctx, cancel := context.WithTimeout(rc.ctx, max(adminTimeout(req.TimeoutMillis), 1))
		defer cancel()
		seen := map[string]int{}
		for _, t := range req.Topics {
			seen[t.Topic]++
		}
		var created []string
		// Authorization: CREATE on the cluster, or else on each topic.
		clusterCreate := rc.allowedCluster(b, acl.OpCreate)
		for _, t := range dedupe(req.Topics, func(t kmsg.CreateTopicsRequestTopic) string { return t.Topic }) {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic = t.Topic
			rt.NumPartitions, rt.ReplicationFactor = -1, -1
			spec := topicSpec{Name: t.Topic, Partitions: t.NumPartitions, ReplicationFactor: t.ReplicationFactor, Configs: map[string]string{}}
			for _, c := range t.Configs {
				if c.Value != nil {
					spec.Configs[c.Name] = *c.Value
				}
			}
			if len(t.ReplicaAssignment) > 0 {
				spec.Assignment = map[int32][]int32{}
				for _, a := range t.ReplicaAssignment {
					spec.Assignment[a.Partition] = a.Replicas
				}
			}
			var err error
			// The configs answered from v5 need DESCRIBE_CONFIGS on the topic;
			// without, Kafka answers TOPIC_AUTHORIZATION_FAILED in their error
			// code, kept for a topic refused before its creation was tried.
			configsDenied := req.GetVersion() >= 5 && !rc.allowed(b, acl.OpDescribeConfigs, acl.ResourceTopic, t.Topic)
			dup := seen[t.Topic] > 1
			createDenied := !clusterCreate && !rc.allowed(b, acl.OpCreate, acl.ResourceTopic, t.Topic)
			switch {
			case dup:
				err = kerr.InvalidRequest
			case createDenied:
				err = fmt.Errorf("%w: CREATE on the cluster or on topic %s is required", kerr.TopicAuthorizationFailed, t.Topic)
			case b.topicExists(ctx, t.Topic):
				// Checked before any other validation, as Kafka does: "ensure the
				// topic exists" callers rely on TOPIC_ALREADY_EXISTS.
				err = fmt.Errorf("%w: Topic '%s' already exists.", kerr.TopicAlreadyExists, t.Topic)
			case internalTopic(t.Topic):
				err = kerr.InvalidRequest
			default:
				err = b.planTopic(&spec)
				if err == nil && !req.ValidateOnly {
					err = b.writeTopic(ctx, spec)
				}
			}
			if configsDenied && (err == nil || dup || createDenied) {
				rt.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
			}
			if err != nil {
				rt.ErrorCode = errorCode(err)
				msg := err.Error()
				rt.ErrorMessage = &msg
			} else {
				rt.NumPartitions = int32(len(spec.Assignment))
				rt.ReplicationFactor = int16(len(spec.Assignment[0]))
				if req.GetVersion() >= 5 && !configsDenied {
					rt.Configs = describeTopicConfigsForCreate(b, spec.Configs)
				}
				if !req.ValidateOnly {
					created = append(created, t.Topic)
				}
			}
			resp.Topics = append(resp.Topics, rt)
		}
		if len(created) > 0 {
			if err := b.waitTopics(ctx, created, false); err != nil {
				// Kafka answers REQUEST_TIMED_OUT for topics still being created; they
				// will finish in the background.
				for i := range resp.Topics {
					if resp.Topics[i].ErrorCode == 0 && contains(created, resp.Topics[i].Topic) && !errors.Is(ctx.Err(), context.Canceled) {
						if _, parts, _, ok := b.meta.topic(resp.Topics[i].Topic); !ok || anyLeaderless(parts) {
							resp.Topics[i].ErrorCode = kerr.RequestTimedOut.Code
						}
					}
				}
			}
			for i := range resp.Topics {
				if _, _, id, ok := b.meta.topic(resp.Topics[i].Topic); ok {
					resp.Topics[i].TopicID = id
				}
			}
		}
		respond(protocol.Response{Msg: resp})
	}()
}

// topicExists reports whether the topic is in the metadata or the store.
func (b *Broker) topicExists(ctx context.Context, topic string) bool {
	if _, _, _, ok := b.meta.topic(topic); ok {
		return true
	}
	ok, _, err := b.Store().Exists(ctx, zkdata.TopicPath(topic))
	return err == nil && ok
}

func anyLeaderless(parts map[int32]partitionMeta) bool {
	for _, p := range parts {
		if p.Leader < 0 {
			return true
		}
	}
	return false
}

func contains(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}

// describeTopicConfigsForCreate lists a new topic's resolved configs (v5+).
func describeTopicConfigsForCreate(b *Broker, overrides map[string]string) []kmsg.CreateTopicsResponseTopicConfig {
	var out []kmsg.CreateTopicsResponseTopicConfig
	for _, d := range config.TopicDefs {
		v, _ := b.cfg.TopicValue(d.Name, overrides)
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name = d.Name
		val := v.Value
		c.Value = &val
		c.Source = int8(v.Source)
		out = append(out, c)
	}
	return out
}
