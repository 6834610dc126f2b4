package broker

// Fetch, key 1, v4-v12.
//
// Consumers read committed records (below the high watermark) from the leader,
// with isolation_level 1 (read_committed) only below the last stable offset, with
// the aborted transactions overlapping the records returned listed from the
// aborted transaction index;
// followers (replica_id >= 0) read up to the log end offset, and their fetch offset
// tells the leader how far they are (high watermark, ISR expansion). Record bytes are
// never read into memory: the response is encoded by hand around file regions that
// the protocol layer sends with sendfile. max_bytes and partition_max_bytes are
// honoured, except that the first non-empty partition returns at least one whole
// batch (KIP-74). With fewer than min_bytes available the request parks until an
// append (or a high-watermark move) wakes it, or max_wait_ms passes. Fetch sessions
// (KIP-227, fetch_session.go): a session holds the partitions and offsets a client
// fetches, so its incremental fetches list only what changed and their answers only
// partitions with something new.

import (
	"errors"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	klog "github.com/ktoolhq/ktool/broker/log"
	"github.com/ktoolhq/ktool/broker/protocol"
	cq "github.com/ktoolhq/ktool/broker/quota"
	"github.com/ktoolhq/ktool/broker/replica"
	"github.com/ktoolhq/ktool/internal/acl"
)

func init() { register(1, 4, 12, handleFetch) }

type fetchPart struct {
	topic     string
	partition int32
	err       error
	info      replica.ReadInfo
	region    klog.Region
	// part is the partition read, told when the region cannot be sent.
	part *replica.Partition
	// aborted lists, for a read_committed fetch, the aborted transactions
	// overlapping the records returned; nil for read_uncommitted.
	aborted []klog.AbortedTxn
}

// Release and SendFailed make a fetchPart the owner of its region in the
// answer's body (protocol.RegionOwner): passing the entry itself costs no
// closure per partition. A region is only read from a partition, so part is
// set wherever there is one.
func (p *fetchPart) Release() { p.region.Release() }

func (p *fetchPart) SendFailed(err error) { p.part.SendFailed(err) }

func handleFetch(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.FetchRequest)
	follower := req.ReplicaID >= 0
	fc, err := b.fetchSessions.begin(req, fetchSessionOwner(rc, req), follower)
	if fc != nil {
		fc.listed = listedPartitions(req)
	}
	if err != nil {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = errorCode(err)
		respond(protocol.Response{Msg: resp})
		return
	}
	req = fc.req
	maxBytes := req.MaxBytes
	if maxBytes <= 0 {
		maxBytes = 50 << 20
	}
	maxBytes = min(maxBytes, b.fetchMaxBytes)
	denied := fetchDenied(b, rc, req, follower)
	if !follower && b.quotas.Active() {
		if w, ok := b.quotas.MaxInWindow(cq.Fetch, rc.quotaUser(), rc.header.ClientID); ok && w < float64(maxBytes) {
			maxBytes = max(int32(w), 1)
		}
	}

	// A fetch that will probably park (its session's last one waited its
	// max wait) registers its waiter as it reads; any other reads first,
	// and registers only when it parks, with a second read.
	var w *fetchWaiter
	if req.MaxWaitMillis > 0 && fc.likelyToWait() {
		w = &fetchWaiter{Waiter: replica.NewWaiter()}
	}
	parts, total, expands := b.readFetch(req, follower, maxBytes, denied, w)
	b.expandIsrs(expands)
	if total >= int64(req.MinBytes) || req.MaxWaitMillis <= 0 || hasError(parts) {
		if w != nil {
			w.unwatch()
		}
		fc.answeredAtMaxWait(false)
		respond(b.fetchAnswer(rc, fc, follower, parts, total))
		return
	}
	// Long poll: park until something is appended (followers) or committed (consumers)
	// on one of the partitions, then read again.
	watched := w != nil
	if !watched {
		releaseParts(parts)
		w = &fetchWaiter{Waiter: replica.NewWaiter()}
	}
	go func() {
		deadline := time.NewTimer(time.Duration(req.MaxWaitMillis) * time.Millisecond)
		defer deadline.Stop()
		defer w.unwatch()
		for {
			if !watched {
				parts, total, expands = b.readFetch(req, follower, maxBytes, denied, w)
				b.expandIsrs(expands)
				if total >= int64(req.MinBytes) || hasError(parts) {
					fc.answeredAtMaxWait(false)
					respond(b.fetchAnswer(rc, fc, follower, parts, total))
					return
				}
			}
			watched = false
			select {
			case <-w.C:
				releaseParts(parts)
			case <-deadline.C:
				fc.answeredAtMaxWait(true)
				respond(b.fetchAnswer(rc, fc, follower, parts, total))
				return
			case <-rc.conn.Draining():
				respond(protocol.Response{Body: encodeFetch(req.GetVersion(), fc.id(), fc.answer(parts), 0)})
				return
			case <-rc.ctx.Done():
				releaseParts(parts)
				respond(protocol.Response{None: true})
				return
			}
		}
	}()
}

// fetchAnswer encodes a fetch's answer. A consumer fetch (never a follower's) is
// measured against consumer_byte_rate; over it, the answer carries the throttle
// time and no data, the bytes are not counted, and the connection is muted for
// that time, as Kafka answers (KIP-219).
func (b *Broker) fetchAnswer(rc *reqCtx, fc *fetchContext, follower bool, parts []fetchPart, total int64) protocol.Response {
	req := fc.req
	if !follower {
		if d := b.recordBytes(rc, cq.Fetch, total); d > 0 {
			b.quotas.Unrecord(cq.Fetch, rc.quotaUser(), rc.header.ClientID, float64(total), time.Now())
			releaseParts(parts)
			return protocol.Response{Body: encodeFetch(req.GetVersion(), fc.id(), nil, int32(d/time.Millisecond))}
		}
	}
	parts = fc.answer(parts)
	b.metrics.fetchSessionUse(follower, fc.incremental, fc.listed, len(parts))
	b.metrics.fetched(parts, follower) // before the answer, so a reader of the metrics sees it
	return protocol.Response{Body: encodeFetch(req.GetVersion(), fc.id(), parts, 0)}
}

func listedPartitions(req *kmsg.FetchRequest) int {
	n := 0
	for _, t := range req.Topics {
		n += len(t.Partitions)
	}
	return n
}

// fetchSessionOwner names who may use a fetch session: the principal and the
// replica id of the fetch that opened it.
func fetchSessionOwner(rc *reqCtx, req *kmsg.FetchRequest) string {
	return rc.identity.Principal.Name + "/" + strconv.Itoa(int(req.ReplicaID))
}

func hasError(parts []fetchPart) bool {
	for _, p := range parts {
		if p.err != nil {
			return true
		}
	}
	return false
}

func releaseParts(parts []fetchPart) {
	for i := range parts {
		parts[i].region.Release()
	}
}

type isrExpansion struct {
	p  *replica.Partition
	st replica.State
}

// fetchDenied authorizes a Fetch as KafkaApis does: a follower's needs
// CLUSTER_ACTION on the cluster (else every partition is refused), a
// consumer's READ on each topic. It returns which topics (by index) are
// refused, nil when none is, so the common case allocates nothing.
func fetchDenied(b *Broker, rc *reqCtx, req *kmsg.FetchRequest, follower bool) []bool {
	if b.authz == nil {
		return nil
	}
	var denied []bool
	all := follower && !rc.allowedCluster(b, acl.OpClusterAction)
	for i, t := range req.Topics {
		if all || (!follower && !rc.allowed(b, acl.OpRead, acl.ResourceTopic, t.Topic)) {
			if denied == nil {
				denied = make([]bool, len(req.Topics))
			}
			denied[i] = true
		}
	}
	return denied
}

// fetchWaiter is the Waiter of a parked fetch and the partitions it was
// last registered on.
type fetchWaiter struct {
	*replica.Waiter
	watched []*replica.Partition
}

// unwatch removes the waiter from the partitions it was last registered on.
func (w *fetchWaiter) unwatch() {
	for _, p := range w.watched {
		p.Unwatch(w.Waiter)
	}
	w.watched = w.watched[:0]
}

// readFetch reads every requested partition within the byte budget. With w
// it first registers w on each partition found (its log end offset for a
// follower, else its high watermark), just before reading it, so that
// nothing appended after the read goes unseen: a parked fetch over 10,000
// partitions looks each up once per read instead of once to watch and once
// to read.
func (b *Broker) readFetch(req *kmsg.FetchRequest, follower bool, maxBytes int32, denied []bool, w *fetchWaiter) ([]fetchPart, int64, []isrExpansion) {
	parts := make([]fetchPart, 0, listedPartitions(req))
	if w != nil {
		w.watched = w.watched[:0]
	}
	var expands []isrExpansion
	var total int64
	budget := int64(maxBytes)
	var throttle *leaderThrottle
	if follower {
		throttle = b.newLeaderThrottle()
	}
	for ti, t := range req.Topics {
		for _, rp := range t.Partitions {
			fp := fetchPart{topic: t.Topic, partition: rp.Partition, info: replica.ReadInfo{HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}}
			if denied != nil && denied[ti] {
				fp.err = kerr.TopicAuthorizationFailed
				parts = append(parts, fp)
				continue
			}
			p := b.replicas.Get(replica.TP{Topic: t.Topic, Partition: rp.Partition})
			if p == nil {
				switch _, ok := b.meta.partition(t.Topic, rp.Partition); {
				case ok:
					fp.err = kerr.NotLeaderForPartition
				case validateTopicName(t.Topic) != nil:
					fp.err = kerr.InvalidTopicException
				default:
					fp.err = kerr.UnknownTopicOrPartition
				}
				parts = append(parts, fp)
				continue
			}
			if w != nil {
				if follower {
					p.WatchLEO(w.Waiter)
				} else {
					p.WatchHW(w.Waiter)
				}
				w.watched = append(w.watched, p)
			}
			fp.part = p
			limit := min(int64(rp.PartitionMaxBytes), budget)
			if limit < 0 {
				limit = 0
			}
			minOne := total == 0
			var expand *replica.State
			if follower {
				throttled, over := throttle.check(t.Topic, rp.Partition, req.ReplicaID, p)
				if over {
					limit, minOne = 0, false // still a fetch: the follower's position counts
				}
				fp.region, fp.info, expand, fp.err = p.ReadForFollower(req.ReplicaID, rp.FetchOffset, int32(limit), rp.CurrentLeaderEpoch, minOne)
				if throttled {
					throttle.sent(fp.region.Len)
				}
			} else {
				readCommitted := req.IsolationLevel == 1
				fp.region, fp.info, fp.err = p.ReadForConsumer(rp.FetchOffset, int32(limit), rp.CurrentLeaderEpoch, minOne, readCommitted)
				if readCommitted {
					fp.aborted = []klog.AbortedTxn{}
					if fp.err == nil && fp.region.Len > 0 {
						fp.aborted = p.Log().AbortedForFetch(rp.FetchOffset, fp.info.LastStableOffset)
					}
				}
			}
			if expand != nil {
				expands = append(expands, isrExpansion{p: p, st: *expand})
			}
			if fp.err != nil && errors.Is(fp.err, kerr.OffsetOutOfRange) {
				fp.info = replica.ReadInfo{HighWatermark: p.HighWatermark(), LastStableOffset: p.Log().LastStableOffset(), LogStartOffset: p.Log().LogStartOffset()}
			}
			total += fp.region.Len
			budget -= fp.region.Len
			parts = append(parts, fp)
		}
	}
	return parts, total, expands
}

func (b *Broker) expandIsrs(expands []isrExpansion) {
	for _, e := range expands {
		go b.replicas.ExpandIsr(e.p, e.st)
	}
}

// encodeFetch writes a FetchResponse with the records as file regions.
func encodeFetch(version int16, sessionID int32, parts []fetchPart, throttleMs int32) *protocol.Body {
	flex := version >= 12
	body := &protocol.Body{}
	buf := make([]byte, 0, 256)
	buf = kbin.AppendInt32(buf, throttleMs) // throttle_time_ms (v1+)
	if version >= 7 {
		buf = kbin.AppendInt16(buf, 0) // error_code
		buf = kbin.AppendInt32(buf, sessionID)
	}
	// Group consecutive partitions of one topic, keeping request order.
	type group struct {
		topic string
		parts []fetchPart
	}
	var groups []group
	for _, p := range parts {
		if n := len(groups); n > 0 && groups[n-1].topic == p.topic {
			groups[n-1].parts = append(groups[n-1].parts, p)
		} else {
			groups = append(groups, group{topic: p.topic, parts: []fetchPart{p}})
		}
	}
	buf = appendArrayLen(buf, len(groups), flex)
	for _, g := range groups {
		if flex {
			buf = kbin.AppendCompactString(buf, g.topic)
		} else {
			buf = kbin.AppendString(buf, g.topic)
		}
		buf = appendArrayLen(buf, len(g.parts), flex)
		for i := range g.parts {
			p := &g.parts[i] // the region's owner in the body
			buf = kbin.AppendInt32(buf, p.partition)
			buf = kbin.AppendInt16(buf, errorCode(p.err))
			buf = kbin.AppendInt64(buf, p.info.HighWatermark)
			buf = kbin.AppendInt64(buf, p.info.LastStableOffset)
			if version >= 5 {
				buf = kbin.AppendInt64(buf, p.info.LogStartOffset)
			}
			// aborted_transactions: null for read_uncommitted
			if flex {
				buf = kbin.AppendCompactNullableArrayLen(buf, len(p.aborted), p.aborted == nil)
			} else {
				buf = kbin.AppendNullableArrayLen(buf, len(p.aborted), p.aborted == nil)
			}
			for _, a := range p.aborted {
				buf = kbin.AppendInt64(buf, a.ProducerID)
				buf = kbin.AppendInt64(buf, a.FirstOffset)
				if flex {
					buf = append(buf, 0) // aborted transaction tagged fields
				}
			}
			if version >= 11 {
				buf = kbin.AppendInt32(buf, -1) // preferred_read_replica
			}
			n := p.region.Len
			if flex {
				buf = kbin.AppendUvarint(buf, uint32(n)+1)
			} else {
				buf = kbin.AppendInt32(buf, int32(n))
			}
			if n > 0 {
				body.Bytes(buf)
				buf = make([]byte, 0, 128)
				body.File(p.region.File, p.region.Pos, n, p)
			}
			if flex {
				buf = append(buf, 0) // partition tagged fields
			}
		}
		if flex {
			buf = append(buf, 0) // topic tagged fields
		}
	}
	if flex {
		buf = append(buf, 0) // response tagged fields
	}
	body.Bytes(buf)
	return body
}

func appendArrayLen(buf []byte, n int, flex bool) []byte {
	if flex {
		return kbin.AppendCompactArrayLen(buf, n)
	}
	return kbin.AppendArrayLen(buf, n)
}
