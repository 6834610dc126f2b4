package broker

// DescribeTransactions, key 65, v0 (Kafka 3.0, KIP-664).
//
// The state of each transactional id this broker coordinates: state,
// producer id and epoch, timeout, start time and partitions. An id the
// principal may not DESCRIBE is TRANSACTIONAL_ID_AUTHORIZATION_FAILED, one
// this broker does not coordinate NOT_COORDINATOR (or
// COORDINATOR_LOAD_IN_PROGRESS), an unknown one TRANSACTIONAL_ID_NOT_FOUND.
// The partitions listed are those of the topics the principal may DESCRIBE.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/acl"
)

func init() { register(65, 0, 0, handleDescribeTransactions) }

func handleDescribeTransactions(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	ids := dedupe(req.TransactionalIDs, func(s string) string { return s })
	var allowed []string
	for _, id := range ids {
		if rc.allowed(b, acl.OpDescribe, acl.ResourceTransactionalID, id) {
			allowed = append(allowed, id)
			continue
		}
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ErrorCode, st.ProducerID, st.ProducerEpoch = id, kerr.TransactionalIDAuthorizationFailed.Code, -1, -1
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	for _, d := range b.txns.Describe(allowed) {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = d.ID
		if d.Err != nil {
			st.ErrorCode, st.ProducerID, st.ProducerEpoch = txnErrorCode(d.Err, 0, 0), -1, -1
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		st.State, st.TimeoutMillis, st.StartTimestamp = d.State.String(), d.TimeoutMs, d.StartMs
		st.ProducerID, st.ProducerEpoch = d.ProducerID, d.Epoch
		for _, tp := range d.Partitions {
			// Only the topics the principal may DESCRIBE, as Kafka answers.
			if !rc.allowed(b, acl.OpDescribe, acl.ResourceTopic, tp.Topic) {
				continue
			}
			if n := len(st.Topics); n > 0 && st.Topics[n-1].Topic == tp.Topic {
				st.Topics[n-1].Partitions = append(st.Topics[n-1].Partitions, tp.Partition)
				continue
			}
			t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
			t.Topic, t.Partitions = tp.Topic, []int32{tp.Partition}
			st.Topics = append(st.Topics, t)
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	respond(protocol.Response{Msg: resp})
}
