package broker

// ListTransactions, key 66, v0-v1 (v0 Kafka 3.0, KIP-664; v1 adds the
// duration filter, KIP-994).
//
// The transactions of the __transaction_state partitions this broker leads,
// filtered by state names (unknown names are echoed in UnknownStateFilters),
// producer ids and, v1, a least running time; only the transactional ids the
// principal may DESCRIBE are listed. COORDINATOR_LOAD_IN_PROGRESS while a
// partition loads, as Kafka.

import (
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/broker/txn"
	"github.com/ktoolhq/ktool/internal/acl"
)

func init() { register(66, 0, 1, handleListTransactions) }

func handleListTransactions(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	var states []txn.State
	for _, name := range dedupe(req.StateFilters, func(s string) string { return s }) {
		if st, ok := txn.ParseState(name); ok {
			states = append(states, st)
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
		}
	}
	if len(req.StateFilters) > 0 && len(states) == 0 {
		// Only unknown states asked for: nothing matches.
		respond(protocol.Response{Msg: resp})
		return
	}
	pids := dedupe(req.ProducerIDFilters, func(p int64) string { return strconv.FormatInt(p, 10) })
	list, err := b.txns.List(states, pids)
	if err != nil {
		resp.ErrorCode = txnErrorCode(err, 0, 0)
		respond(protocol.Response{Msg: resp})
		return
	}
	now := time.Now().UnixMilli()
	for _, m := range list {
		if req.GetVersion() >= 1 && req.DurationFilterMillis >= 0 &&
			(m.State != txn.Ongoing || now-m.StartMs < req.DurationFilterMillis) {
			continue
		}
		if !rc.allowed(b, acl.OpDescribe, acl.ResourceTransactionalID, m.ID) {
			continue
		}
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = m.ID, m.ProducerID, m.State.String()
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	respond(protocol.Response{Msg: resp})
}
