package broker

// CreatePartitions, key 37, v0-v3.
//
// Adds partitions to topics: the new partitions get replicas by Kafka's
// assignment (continuing the existing spread) or an explicit assignment; the
// topic's znode is rewritten conditionally and the controller elects leaders.

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

func init() { register(37, 0, 3, handleCreatePartitions) }

func handleCreatePartitions(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	go func() {
		ctx, cancel := context.WithTimeout(rc.ctx, max(adminTimeout(req.TimeoutMillis), 1))
		defer cancel()
		var grown []string
		dups := duplicates(req.Topics, func(t kmsg.CreatePartitionsRequestTopic) string { return t.Topic })
		for _, t := range dedupe(req.Topics, func(t kmsg.CreatePartitionsRequestTopic) string { return t.Topic }) {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic = t.Topic
			var err error
			switch {
			case dups[t.Topic] > 1:
				err = fmt.Errorf("%w: topic %s is listed more than once", kerr.InvalidRequest, t.Topic)
			case !rc.allowed(b, acl.OpAlter, acl.ResourceTopic, t.Topic):
				// Authorization: ALTER on each topic.
				err = fmt.Errorf("%w: ALTER on topic %s is required", kerr.TopicAuthorizationFailed, t.Topic)
			default:
				err = b.addPartitions(ctx, t, req.ValidateOnly)
			}
			if err != nil {
				rt.ErrorCode = errorCode(err)
				msg := err.Error()
				rt.ErrorMessage = &msg
			} else if !req.ValidateOnly {
				grown = append(grown, t.Topic)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		_ = b.waitTopics(ctx, grown, false)
		respond(protocol.Response{Msg: resp})
	}()
}

func (b *Broker) addPartitions(ctx context.Context, t kmsg.CreatePartitionsRequestTopic, validateOnly bool) error {
	if err := validateTopicName(t.Topic); err != nil {
		return err
	}
	s := b.Store()
	data, st, err := s.Get(ctx, zkdata.TopicPath(t.Topic))
	if errors.Is(err, coord.ErrNoNode) {
		return kerr.UnknownTopicOrPartition
	}
	if err != nil {
		return err
	}
	a, err := zkdata.DecodeTopicAssignment(data)
	if err != nil {
		return err
	}
	cur := int32(len(a.Partitions))
	if t.Count <= cur {
		return fmt.Errorf("%w: topic has %d partitions; the new count must be larger", kerr.InvalidPartitions, cur)
	}
	rf := len(a.Partitions[0])
	add := int(t.Count - cur)
	live := b.liveBrokerIDs()
	if len(t.Assignment) == 0 {
		if err := b.checkPartitionLimits(int64(add), int64(rf), live, nil); err != nil {
			return err
		}
	}
	var extra map[int32][]int32
	if len(t.Assignment) > 0 {
		if len(t.Assignment) != add {
			return fmt.Errorf("%w: %d assignments for %d new partitions", kerr.InvalidReplicaAssignment, len(t.Assignment), add)
		}
		extra = map[int32][]int32{}
		for i, as := range t.Assignment {
			if len(as.Replicas) != rf {
				return fmt.Errorf("%w: new partitions need %d replicas", kerr.InvalidReplicaAssignment, rf)
			}
			for _, id := range as.Replicas {
				if !containsID(live, id) {
					return fmt.Errorf("%w: broker %d is not live", kerr.InvalidReplicaAssignment, id)
				}
			}
			extra[cur+int32(i)] = as.Replicas
		}
		if err := b.checkPartitionLimits(int64(add), int64(rf), live, extra); err != nil {
			return err
		}
	} else {
		// Continue the spread from the existing first replica of partition 0, as Kafka does.
		extra, err = b.assignReplicas(live, add, rf, cur, a.Partitions[0][0])
		if err != nil {
			return fmt.Errorf("%w: %v", kerr.InvalidReplicationFactor, err)
		}
	}
	if validateOnly {
		return nil
	}
	for p, r := range extra {
		a.Partitions[p] = r
	}
	if _, err := s.Set(ctx, zkdata.TopicPath(t.Topic), zkdata.EncodeTopicAssignment(a), st.Version); err != nil {
		if errors.Is(err, coord.ErrBadVersion) {
			return fmt.Errorf("%w: the topic changed concurrently; retry", kerr.ReassignmentInProgress)
		}
		return err
	}
	return nil
}

func containsID(ids []int32, id int32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
