package broker

// WriteTxnMarkers, key 27, v0-v1 (v1 flexible), inter-broker.
//
// A transaction coordinator asks the leader of each partition of a finished
// transaction to append its COMMIT or ABORT control batch. It needs
// CLUSTER_ACTION, as in Kafka: brokers have it, and so may an operator's
// principal, whose `ktool txn abort` (Kafka's Admin.abortTransaction) sends
// an ABORT marker for a hanging transaction found with DescribeProducers
// (61_describe_producers.go). For every partition the leader appends the
// marker with the producer id and epoch and the coordinator epoch
// (klog.Log.AppendMarker fences an older producer epoch with
// INVALID_PRODUCER_EPOCH and an older coordinator epoch with
// TRANSACTION_COORDINATOR_FENCED), and answers once the marker is replicated
// as acks=all would (min.insync.replicas checked before the append). A
// partition this broker does not lead is NOT_LEADER_OR_FOLLOWER, one that does
// not exist UNKNOWN_TOPIC_OR_PARTITION. A marker written to a __consumer_offsets
// partition also completes that producer's pending transactional offset
// commits there in the group coordinator.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/broker/replica"
	"github.com/ktoolhq/ktool/internal/acl"
	"github.com/ktoolhq/ktool/internal/batch"
)

func init() { register(27, 0, 1, handleWriteTxnMarkers) }

// markerTimeout bounds the wait for a marker's replication, as Kafka's
// request.timeout.ms does for the markers it appends.
const markerTimeout = 30 * time.Second

type markerWait struct {
	p      *replica.Partition
	last   int64
	mi     int // marker index in the response
	ti, pi int // topic and partition index within it
	commit bool
	pid    int64
}

func handleWriteTxnMarkers(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	var waits []markerWait
	for mi, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		marker := batch.Marker{Type: batch.ControlAbort, CoordinatorEpoch: m.CoordinatorEpoch}
		if m.Committed {
			marker.Type = batch.ControlCommit
		}
		// A topic or partition named twice gets one marker and one answer.
		seen := make(map[string]map[int32]bool, min(len(m.Topics), 1<<10))
		for _, t := range m.Topics {
			if seen[t.Topic] == nil {
				seen[t.Topic] = make(map[int32]bool)
				rm.Topics = append(rm.Topics, kmsg.WriteTxnMarkersResponseMarkerTopic{Topic: t.Topic})
			}
		}
		topicIndex := make(map[string]int, len(rm.Topics))
		for i, t := range rm.Topics {
			topicIndex[t.Topic] = i
		}
		for _, t := range m.Topics {
			ti := topicIndex[t.Topic]
			rt := &rm.Topics[ti]
			for _, p := range t.Partitions {
				if seen[t.Topic][p] {
					continue
				}
				seen[t.Topic][p] = true
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				res, part, err := b.appendMarker(t.Topic, p, m.ProducerID, m.ProducerEpoch, marker)
				rp.ErrorCode = errorCode(err)
				rt.Partitions = append(rt.Partitions, rp)
				if err == nil {
					waits = append(waits, markerWait{p: part, last: res, mi: mi, ti: ti, pi: len(rt.Partitions) - 1, commit: m.Committed, pid: m.ProducerID})
				}
			}
		}
		resp.Markers = append(resp.Markers, rm)
	}
	if len(waits) == 0 {
		respond(protocol.Response{Msg: resp})
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(rc.ctx, markerTimeout)
		defer cancel()
		for _, w := range waits {
			rp := &resp.Markers[w.mi].Topics[w.ti].Partitions[w.pi]
			if err := w.p.WaitReplicated(ctx, w.last); err != nil {
				rp.ErrorCode = errorCode(err)
				continue
			}
			if w.p.Topic == offsetsTopic {
				b.groups.CompleteTxn(w.p.ID, w.pid, w.commit, w.last)
			}
		}
		respond(protocol.Response{Msg: resp})
	}()
}

// appendMarker appends one marker as leader; it returns the marker's offset.
func (b *Broker) appendMarker(topic string, partition int32, pid int64, epoch int16, m batch.Marker) (int64, *replica.Partition, error) {
	if pid < 0 || epoch < 0 {
		return 0, nil, kerr.InvalidProducerEpoch
	}
	p, err := b.leaderPartition(topic, partition)
	if err != nil {
		return 0, nil, err
	}
	res, err := p.AppendMarker(pid, epoch, m)
	if err != nil {
		return 0, nil, err
	}
	return res.LastOffset, p, nil
}

// markerGate refuses WriteTxnMarkers without CLUSTER_ACTION: every partition
// of every marker is CLUSTER_AUTHORIZATION_FAILED.
func markerGate() clusterGate {
	return clusterGate{acl.OpClusterAction, func(r kmsg.Request) kmsg.Response {
		req := r.(*kmsg.WriteTxnMarkersRequest)
		resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
		for _, m := range req.Markers {
			rm := kmsg.NewWriteTxnMarkersResponseMarker()
			rm.ProducerID = m.ProducerID
			for _, t := range m.Topics {
				rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
					rp.Partition, rp.ErrorCode = p, clusterAuthFailed
					rt.Partitions = append(rt.Partitions, rp)
				}
				rm.Topics = append(rm.Topics, rt)
			}
			resp.Markers = append(resp.Markers, rm)
		}
		return resp
	}}
}
