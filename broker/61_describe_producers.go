package broker

// DescribeProducers, key 61, v0 (Kafka 3.0, KIP-664).
//
// The producer state of each requested partition this broker leads: every
// producer id it holds, with its epoch, last sequence and timestamp, the
// coordinator epoch of its last marker and the first offset of its open
// transaction (-1 when none). `ktool txn abort --start-offset` finds a
// hanging transaction's producer with it. As Kafka's KafkaApis: a topic the
// principal may not READ (DESCRIBE is not enough) is
// TOPIC_AUTHORIZATION_FAILED in each of its partitions, an
// invalid name INVALID_TOPIC_EXCEPTION, an unknown topic or partition
// UNKNOWN_TOPIC_OR_PARTITION, a partition led elsewhere
// NOT_LEADER_OR_FOLLOWER. A topic or partition named twice is answered once.

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/acl"
)

func init() { register(61, 0, 0, handleDescribeProducers) }

func handleDescribeProducers(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	// One answer per topic name, its partitions merged and deduplicated.
	order := dedupe(req.Topics, func(t kmsg.DescribeProducersRequestTopic) string { return t.Topic })
	parts := make(map[string][]int32, len(order))
	for _, t := range req.Topics {
		parts[t.Topic] = append(parts[t.Topic], t.Partitions...)
	}
	for _, t := range order {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		topicErr := validateTopicName(t.Topic)
		if topicErr == nil && !rc.allowed(b, acl.OpRead, acl.ResourceTopic, t.Topic) {
			topicErr = kerr.TopicAuthorizationFailed
		}
		for _, id := range dedupe(parts[t.Topic], func(p int32) string { return strconv.FormatInt(int64(p), 10) }) {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = id
			err := topicErr
			if err == nil {
				rp.ActiveProducers, err = b.activeProducers(t.Topic, id)
			}
			rp.ErrorCode = errorCode(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	respond(protocol.Response{Msg: resp})
}

// activeProducers is the producer state of a partition this broker leads.
func (b *Broker) activeProducers(topic string, partition int32) ([]kmsg.DescribeProducersResponseTopicPartitionActiveProducer, error) {
	p, err := b.leaderPartition(topic, partition)
	if err != nil {
		return nil, err
	}
	ps := p.Log().ActiveProducers()
	out := make([]kmsg.DescribeProducersResponseTopicPartitionActiveProducer, 0, len(ps))
	for _, e := range ps {
		ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
		ap.ProducerID, ap.ProducerEpoch = e.ProducerID, int32(e.ProducerEpoch)
		ap.LastSequence, ap.LastTimestamp = e.LastSequence, e.LastTimestamp
		ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = e.CoordinatorEpoch, e.TxnStartOffset
		out = append(out, ap)
	}
	return out, nil
}
