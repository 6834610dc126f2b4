package broker

// Produce, key 0, v3-v9 (magic v2 record batches only).
//
// The records field stays the bytes the client sent: the log validates batch headers
// and CRC32C, sets baseOffset and partitionLeaderEpoch in place and appends with one
// write. With a topic compression.type other than "producer", batches in another
// codec are recompressed through the codec plugins first. acks=0 sends no response,
// acks=1 answers after the leader's append, acks=-1 parks the response until the ISR
// has the records (high watermark past them) or timeout_ms passes; an ISR smaller
// than min.insync.replicas gives NOT_ENOUGH_REPLICAS before the append and
// NOT_ENOUGH_REPLICAS_AFTER_APPEND if it shrank during the wait.
//
// ApiVersions lists Produce from v0 although v0-v2 (message sets v0/v1) are
// refused: librdkafka only compresses with gzip, snappy or lz4 when the broker's
// range includes v0, and otherwise silently sends uncompressed batches. Kafka 4.0
// does the same for the same reason (KAFKA-18659). Nothing sends v0-v2 to a broker
// that also offers v3 and above.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	klog "github.com/ktoolhq/ktool/broker/log"
	"github.com/ktoolhq/ktool/broker/protocol"
	cq "github.com/ktoolhq/ktool/broker/quota"
	"github.com/ktoolhq/ktool/broker/replica"
	"github.com/ktoolhq/ktool/internal/acl"
)

func init() { registerAdvertised(0, 0, 3, 9, handleProduce) }

// reuseFrame tells the protocol layer which requests' frames it may reuse once
// answered: Produce's. handleProduce appends the records (a copy into the
// page cache) before it responds and keeps no slice of the request after,
// so a producer's megabyte frames cost no allocation each. A change that
// holds record bytes past the response (an asynchronous append) must take
// Produce out of here.
func reuseFrame(key int16) bool { return key == 0 }

// pendingAck is a partition's answer waiting for its records to be synced
// (flush.messages) and, with acks=all, replicated.
type pendingAck struct {
	p         *replica.Partition
	last      int64
	sync      bool
	replicate bool
	ti, pi    int // where its answer sits in the response
}

func handleProduce(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.ProduceRequest)
	var checks map[replica.TP]txnCheck
	if need := b.txnVerificationsNeeded(rc, req); len(need) > 0 {
		// KIP-890: ask the transaction coordinator first. On the connection's
		// loop, as Kafka mutes a connection while it handles a request: the
		// client's next produce (the same transaction's next sequence) must
		// not be appended before this one.
		checks = b.verifyTxnProduce(rc.ctx, req, need)
	}
	produce(b, rc, req, checks, respond)
}

func produce(b *Broker, rc *reqCtx, req *kmsg.ProduceRequest, checks map[replica.TP]txnCheck, respond func(protocol.Response)) {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	acks := req.Acks
	var waits []pendingAck
	// Authorization (KafkaApis.handleProduceRequest): WRITE on the
	// transactional id when there is one, WRITE on each topic. An idempotent
	// producer needs nothing more (KIP-679: WRITE on the topic implies it).
	txnDenied := req.TransactionID != nil && !rc.allowed(b, acl.OpWrite, acl.ResourceTransactionalID, *req.TransactionID)
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.ProduceResponseTopicPartition, 0, len(t.Partitions))
		denied := kerr.TransactionalIDAuthorizationFailed.Code
		if !txnDenied {
			denied = 0
			if !rc.allowed(b, acl.OpWrite, acl.ResourceTopic, t.Topic) {
				denied = kerr.TopicAuthorizationFailed.Code
			}
		}
		// The topic's compression.type, looked up at the first partition led here.
		var ct string
		var overrides map[string]string
		resolved := false
		var inBytes, inRecords int
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
			if acks != 0 && acks != 1 && acks != -1 {
				rp.ErrorCode = kerr.InvalidRequiredAcks.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			if denied != 0 {
				rp.ErrorCode = denied
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			var res klog.AppendResult
			part, err := b.leaderPartition(t.Topic, p.Partition)
			if err == nil && internalTopic(t.Topic) {
				err = fmt.Errorf("%w: cannot append to internal topic %s", kerr.InvalidTopicException, t.Topic)
			}
			if err == nil {
				if !resolved {
					ct, overrides = b.topicCompression(t.Topic)
					resolved = true
				}
				var records []byte
				records, err = b.maybeRecompress(rc.ctx, ct, overrides, p.Records)
				if err == nil {
					res, err = appendProduced(part, records, acks, checks)
				}
			}
			if err != nil {
				rp.ErrorCode = errorCode(err)
				msg := err.Error()
				rp.ErrorMessage = &msg
				b.metrics.produceError(t.Topic)
			} else {
				rp.BaseOffset = res.BaseOffset
				rp.LogAppendTime = res.LogAppendTime
				rp.LogStartOffset = res.LogStartOffset
				if !res.Duplicate {
					inBytes += len(p.Records)
					inRecords += res.NumRecords
				}
			}
			if err == nil && acks == -1 && !res.Sync {
				// A leader alone in its ISR has moved the high watermark
				// in the append: answer now rather than park.
				if done, rerr := part.Replicated(res.LastOffset); done {
					rp.ErrorCode = errorCode(rerr)
					rt.Partitions = append(rt.Partitions, rp)
					continue
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
			if err == nil && (acks == -1 || res.Sync) {
				waits = append(waits, pendingAck{p: part, last: res.LastOffset, sync: res.Sync, replicate: acks == -1,
					ti: len(resp.Topics), pi: len(rt.Partitions) - 1})
			}
		}
		if inBytes > 0 {
			b.metrics.bytesIn(t.Topic, inBytes, inRecords)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	// KIP-219: the answer carries the throttle time, and the connection is
	// muted for it (acks=0 too, though no answer tells the client why).
	if d := b.recordBytes(rc, cq.Produce, produceBytes(req)); d > 0 {
		resp.ThrottleMillis = int32(d / time.Millisecond)
	}
	if acks == 0 {
		respond(protocol.Response{None: true})
		if len(waits) > 0 {
			go syncAcks(waits, resp)
		}
		return
	}
	if len(waits) == 0 {
		respond(protocol.Response{Msg: resp})
		return
	}
	// The waits run off the connection's reader, so the connection's next
	// requests append meanwhile and one sync covers them all (group commit).
	// An acks=all wait is woken by the follower fetch that moves the high
	// watermark (replica.Partition.WaitReplicated), never by a timer.
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	go func() {
		ctx, cancel := context.WithTimeout(rc.ctx, timeout)
		defer cancel()
		syncAcks(waits, resp)
		for _, w := range waits {
			rp := &resp.Topics[w.ti].Partitions[w.pi]
			if !w.replicate || rp.ErrorCode != 0 {
				continue
			}
			if err := w.p.WaitReplicated(ctx, w.last); err != nil {
				rp.ErrorCode = errorCode(err)
			}
		}
		respond(protocol.Response{Msg: resp})
	}()
}

// syncAcks syncs the partitions that flush.messages asks to (at once, so
// that their fdatasyncs share the file system's journal commit) and marks a
// failed one KAFKA_STORAGE_ERROR: its records are not acknowledged.
func syncAcks(waits []pendingAck, resp *kmsg.ProduceResponse) {
	var wg sync.WaitGroup
	for _, w := range waits {
		if !w.sync {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.p.Sync(w.last + 1); err != nil {
				rp := &resp.Topics[w.ti].Partitions[w.pi]
				rp.ErrorCode = errorCode(err)
				msg := err.Error()
				rp.ErrorMessage = &msg
			}
		}()
	}
	wg.Wait()
}

// leaderPartition returns the local partition if this broker leads it.
// produceBytes is what a produce request counts against producer_byte_rate:
// the record bytes it carries.
func produceBytes(req *kmsg.ProduceRequest) int64 {
	var n int64
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			n += int64(len(p.Records))
		}
	}
	return n
}

func (b *Broker) leaderPartition(topic string, partition int32) (*replica.Partition, error) {
	p := b.replicas.Get(replica.TP{Topic: topic, Partition: partition})
	if p == nil {
		if _, ok := b.meta.partition(topic, partition); ok {
			return nil, kerr.NotLeaderForPartition
		}
		if err := validateTopicName(topic); err != nil {
			return nil, err
		}
		return nil, kerr.UnknownTopicOrPartition
	}
	if p.Offline() {
		return nil, kerr.KafkaStorageError // its log dir failed (KIP-112)
	}
	if !p.IsLeader() {
		return nil, kerr.NotLeaderForPartition
	}
	return p, nil
}

// errorCode maps an error to a Kafka error code; anything unknown is reported as
// KAFKA_STORAGE_ERROR when it came from the disk, else UNKNOWN_SERVER_ERROR.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return kerr.RequestTimedOut.Code
	}
	return kerr.UnknownServerError.Code
}
