package broker

// AddPartitionsToTxn, key 24, v0-v3 for clients (v3 flexible), and v4 for
// brokers (Kafka 3.6, KIP-890 part 1), served but not advertised.
//
// v0-v3 add partitions to the producer's transaction: TransactionalId WRITE is
// required (else every partition is TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
// Topic WRITE on each topic (TOPIC_AUTHORIZATION_FAILED, always for the
// internal topics __consumer_offsets and __transaction_state), the partition must
// exist (UNKNOWN_TOPIC_OR_PARTITION); when any partition fails so, the others
// are OPERATION_NOT_ATTEMPTED, as in Kafka. Then the coordinator adds them all
// or none. PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below v2.
//
// v4 with VerifyOnly (CLUSTER_ACTION only) asks whether partitions are in the
// ongoing transaction of a producer id and epoch, without adding them: a
// partition leader asks before appending a transactional batch. A partition
// not in it is INVALID_TXN_STATE. v4 without VerifyOnly is INVALID_REQUEST
// (ktool's brokers never send it).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/broker/txn"
	"github.com/ktoolhq/ktool/internal/acl"
)

func init() {
	register(24, 0, 4, handleAddPartitionsToTxn)
	advertisedMax[24] = 3
}

func handleAddPartitionsToTxn(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.AddPartitionsToTxnRequest)
	if req.GetVersion() >= 4 {
		verifyPartitionsInTxn(b, rc, req, respond)
		return
	}
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	// One answer per topic and partition, whatever the request repeats.
	codes := map[txn.TP]int16{}
	var order []txn.TP
	txnAllowed := rc.allowed(b, acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID)
	failed := false
	topicOK := map[string]int16{}
	for _, t := range req.Topics {
		code, seen := topicOK[t.Topic]
		if !seen {
			switch {
			case !txnAllowed:
				code = kerr.TransactionalIDAuthorizationFailed.Code
			case internalTopic(t.Topic) || !rc.allowed(b, acl.OpWrite, acl.ResourceTopic, t.Topic):
				// The internal topics take no client's transaction, a super
				// user's neither, as Kafka refuses them.
				code = kerr.TopicAuthorizationFailed.Code
			}
			topicOK[t.Topic] = code
		}
		for _, p := range t.Partitions {
			tp := txn.TP{Topic: t.Topic, Partition: p}
			if _, dup := codes[tp]; dup {
				continue
			}
			c := code
			if c == 0 {
				if _, ok := b.meta.partition(t.Topic, p); !ok {
					c = kerr.UnknownTopicOrPartition.Code
				}
			}
			failed = failed || c != 0
			codes[tp] = c
			order = append(order, tp)
		}
	}
	answer := func(rest int16) {
		for _, tp := range order {
			c := codes[tp]
			if c == 0 {
				c = rest
			}
			if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != tp.Topic {
				rt := kmsg.NewAddPartitionsToTxnResponseTopic()
				rt.Topic = tp.Topic
				resp.Topics = append(resp.Topics, rt)
			}
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = tp.Partition, c
			resp.Topics[len(resp.Topics)-1].Partitions = append(resp.Topics[len(resp.Topics)-1].Partitions, rp)
		}
		respond(protocol.Response{Msg: resp})
	}
	if failed {
		answer(kerr.OperationNotAttempted.Code)
		return
	}
	if req.TransactionalID == "" {
		answer(kerr.InvalidRequest.Code)
		return
	}
	go func() {
		err := b.txns.AddPartitions(rc.ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, order)
		answer(txnErrorCode(err, req.GetVersion(), 2))
	}()
}

// verifyPartitionsInTxn serves v4: VerifyOnly checks for partition leaders.
func verifyPartitionsInTxn(b *Broker, rc *reqCtx, req *kmsg.AddPartitionsToTxnRequest, respond func(protocol.Response)) {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if !rc.allowedCluster(b, acl.OpClusterAction) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		respond(protocol.Response{Msg: resp})
		return
	}
	seen := map[string]bool{}
	for _, t := range req.Transactions {
		if seen[t.TransactionalID] {
			continue
		}
		seen[t.TransactionalID] = true
		rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rt.TransactionalID = t.TransactionalID
		var tps []txn.TP
		dup := map[txn.TP]bool{}
		for _, tt := range t.Topics {
			for _, p := range tt.Partitions {
				tp := txn.TP{Topic: tt.Topic, Partition: p}
				if !dup[tp] {
					dup[tp] = true
					tps = append(tps, tp)
				}
			}
		}
		code := int16(0)
		var missing map[txn.TP]bool
		switch {
		case !t.VerifyOnly:
			code = kerr.InvalidRequest.Code
		case t.TransactionalID == "":
			code = kerr.InvalidRequest.Code
		default:
			m, err := b.txns.Verify(t.TransactionalID, t.ProducerID, t.ProducerEpoch, tps)
			code = txnErrorCode(err, req.GetVersion(), 0)
			missing = map[txn.TP]bool{}
			for _, tp := range m {
				missing[tp] = true
			}
		}
		for _, tp := range tps {
			c := code
			if c == 0 && missing[tp] {
				c = kerr.InvalidTxnState.Code
			}
			if n := len(rt.Topics); n == 0 || rt.Topics[n-1].Topic != tp.Topic {
				rtt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				rtt.Topic = tp.Topic
				rt.Topics = append(rt.Topics, rtt)
			}
			rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
			rp.Partition, rp.ErrorCode = tp.Partition, c
			rt.Topics[len(rt.Topics)-1].Partitions = append(rt.Topics[len(rt.Topics)-1].Partitions, rp)
		}
		resp.Transactions = append(resp.Transactions, rt)
	}
	respond(protocol.Response{Msg: resp})
}
