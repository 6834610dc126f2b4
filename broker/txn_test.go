package broker_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/ktoolhq/ktool/broker/brokertest"
	"github.com/ktoolhq/ktool/broker/protocol"
)

var txnProps = map[string]string{
	"transaction.state.log.num.partitions":                        "3",
	"transaction.max.timeout.ms":                                  "60000",
	"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200",
	"offsets.topic.num.partitions":                                "3",
	"group.initial.rebalance.delay.ms":                            "0",
}

// txnCoordinator is the broker coordinating transactional id id (found with
// FindCoordinator key type 1, retried until known), to send it requests
// without the client's retries.
func txnCoordinator(t *testing.T, cl *kgo.Client, id string) (*kgo.Broker, int32) {
	t.Helper()
	var node int32
	brokertest.Eventually(t, 30*time.Second, func() error {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKey = 1, id
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		node = resp.NodeID
		return nil
	})
	return cl.Broker(int(node)), node
}

func txnInit(t *testing.T, r kmsg.Requestor, id string, version int16, timeoutMs int32, pid int64, epoch int16) (*kmsg.InitProducerIDResponse, error) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version, req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = version, &id, timeoutMs, pid, epoch
	resp, err := req.RequestWith(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return resp, kerr.ErrorForCode(resp.ErrorCode)
}

func txnAdd(t *testing.T, r kmsg.Requestor, version int16, id string, pid int64, epoch int16, topic string, parts ...int32) map[int32]error {
	t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = version, id, pid, epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, parts
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]error{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = kerr.ErrorForCode(p.ErrorCode)
		}
	}
	return out
}

func txnEnd(t *testing.T, r kmsg.Requestor, version int16, id string, pid int64, epoch int16, commit bool) error {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = version, id, pid, epoch, commit
	resp, err := req.RequestWith(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}

func txnDescribe(t *testing.T, r kmsg.Requestor, id string) kmsg.DescribeTransactionsResponseTransactionState {
	t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	resp, err := req.RequestWith(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.TransactionStates) != 1 {
		t.Fatalf("DescribeTransactions: %d states", len(resp.TransactionStates))
	}
	return resp.TransactionStates[0]
}

func servesKey(t *testing.T, cl *kgo.Client, key int16) bool {
	t.Helper()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == key {
			return true
		}
	}
	return false
}

// TestTxnCoordinatorStateMachine drives one transactional id through the
// coordinator's requests with raw requests and checks Kafka's answers,
// including after a restart (the state is loaded from __transaction_state).
func TestTxnCoordinatorStateMachine(t *testing.T) {
	c := brokertest.NewCluster(t, 1, brokertest.WithProps(txnProps))
	adm := c.Admin()
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "tx-a"); err != nil {
		t.Fatal(err)
	}
	cl := c.Client()
	const id = "tx-state-machine"
	co, _ := txnCoordinator(t, cl, id)

	if _, err := txnInit(t, co, id, 4, 120000, -1, -1); !errors.Is(err, kerr.InvalidTransactionTimeout) {
		t.Fatalf("timeout above transaction.max.timeout.ms: %v", err)
	}
	// FindCoordinator may name the coordinator while it still loads its
	// partition: clients retry COORDINATOR_LOAD_IN_PROGRESS, and so does this.
	var r0 *kmsg.InitProducerIDResponse
	var err error
	brokertest.Eventually(t, 30*time.Second, func() error {
		r0, err = txnInit(t, co, id, 4, 10000, -1, -1)
		if errors.Is(err, kerr.CoordinatorLoadInProgress) {
			return err
		}
		return nil
	})
	if err != nil || r0.ProducerEpoch != 0 || r0.ProducerID < 0 {
		t.Fatalf("first InitProducerId: %+v %v", r0, err)
	}
	r1, err := txnInit(t, co, id, 4, 10000, -1, -1)
	if err != nil || r1.ProducerID != r0.ProducerID || r1.ProducerEpoch != 1 {
		t.Fatalf("second InitProducerId: %+v %v", r1, err)
	}
	pid := r1.ProducerID

	// The first producer is fenced: INVALID_PRODUCER_EPOCH below v2, PRODUCER_FENCED from v2.
	v1 := kversion.V2_8_0()
	v1.SetMaxKeyVersion(24, 1)
	old, _ := txnCoordinator(t, c.Client(kgo.MaxVersions(v1)), id)
	if errs := txnAdd(t, old, 1, id, pid, 0, "tx-a", 0); !errors.Is(errs[0], kerr.InvalidProducerEpoch) {
		t.Fatalf("fenced add v1: %v", errs)
	}
	if errs := txnAdd(t, co, 3, id, pid, 0, "tx-a", 0); !errors.Is(errs[0], kerr.ProducerFenced) {
		t.Fatalf("fenced add v3: %v", errs)
	}
	if errs := txnAdd(t, co, 3, id, pid+1, 1, "tx-a", 0); !errors.Is(errs[0], kerr.InvalidProducerIDMapping) {
		t.Fatalf("add with another producer id: %v", errs)
	}
	errs := txnAdd(t, co, 3, id, pid, 1, "tx-a", 0, 7)
	if !errors.Is(errs[7], kerr.UnknownTopicOrPartition) || !errors.Is(errs[0], kerr.OperationNotAttempted) {
		t.Fatalf("add with an unknown partition: %v", errs)
	}
	if errs := txnAdd(t, co, 3, id, pid, 1, "tx-a", 0, 1, 1); errs[0] != nil || errs[1] != nil || len(errs) != 2 {
		t.Fatalf("add: %v", errs)
	}
	aoReq := kmsg.NewPtrAddOffsetsToTxnRequest()
	aoReq.Version, aoReq.TransactionalID, aoReq.ProducerID, aoReq.ProducerEpoch, aoReq.Group = 3, id, pid, 1, "tx-group"
	if ao, err := aoReq.RequestWith(ctx, co); err != nil || ao.ErrorCode != 0 {
		t.Fatalf("AddOffsetsToTxn: %+v %v", ao, err)
	}

	d := txnDescribe(t, co, id)
	var parts []string
	for _, tp := range d.Topics {
		for _, p := range tp.Partitions {
			parts = append(parts, tp.Topic+"/"+string(rune('0'+p)))
		}
	}
	if d.ErrorCode != 0 || d.State != "Ongoing" || d.ProducerID != pid || d.ProducerEpoch != 1 || d.TimeoutMillis != 10000 ||
		len(parts) != 3 || !slices.Contains(parts, "tx-a/0") || !slices.Contains(parts, "tx-a/1") || d.StartTimestamp <= 0 {
		t.Fatalf("DescribeTransactions: %+v (partitions %v)", d, parts)
	}
	if d := txnDescribe(t, co, "tx-unknown"); !errors.Is(kerr.ErrorForCode(d.ErrorCode), kerr.TransactionalIDNotFound) {
		// The unknown id may hash to another partition; this broker leads them all.
		t.Fatalf("describe unknown: %+v", d)
	}
	lreq := kmsg.NewPtrListTransactionsRequest()
	lreq.StateFilters = []string{"Ongoing", "Bogus"}
	lresp, err := lreq.RequestWith(ctx, co)
	if err != nil || lresp.ErrorCode != 0 || len(lresp.TransactionStates) != 1 || lresp.TransactionStates[0].TransactionalID != id ||
		!slices.Equal(lresp.UnknownStateFilters, []string{"Bogus"}) {
		t.Fatalf("ListTransactions: %+v %v", lresp, err)
	}

	// KIP-890 part 1: what a partition leader asks before appending.
	vreq := kmsg.NewPtrAddPartitionsToTxnRequest()
	vreq.Version = 4
	vt := kmsg.NewAddPartitionsToTxnRequestTransaction()
	vt.TransactionalID, vt.ProducerID, vt.ProducerEpoch, vt.VerifyOnly = id, pid, 1, true
	vtt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	vtt.Topic, vtt.Partitions = "tx-a", []int32{0, 2}
	vt.Topics = append(vt.Topics, vtt)
	vreq.Transactions = append(vreq.Transactions, vt)
	// v4 is for brokers and not advertised, so a client would not send it: a raw one does.
	raw := &protocol.Client{Addr: c.Addrs()[0]}
	defer raw.Close()
	kv, err := raw.Request(ctx, vreq)
	if err != nil {
		t.Fatal(err)
	}
	vresp := kv.(*kmsg.AddPartitionsToTxnResponse)
	if len(vresp.Transactions) != 1 || len(vresp.Transactions[0].Topics) != 1 {
		t.Fatalf("verify: %+v %v", vresp, err)
	}
	for _, p := range vresp.Transactions[0].Topics[0].Partitions {
		want := int16(0)
		if p.Partition == 2 {
			want = kerr.InvalidTxnState.Code
		}
		if p.ErrorCode != want {
			t.Fatalf("verify partition %d: code %d, want %d", p.Partition, p.ErrorCode, want)
		}
	}

	if err := txnEnd(t, co, 3, id, pid+1, 1, true); !errors.Is(err, kerr.InvalidProducerIDMapping) {
		t.Fatalf("EndTxn with another producer id: %v", err)
	}
	if err := txnEnd(t, co, 3, "tx-never-seen", pid, 1, true); !errors.Is(err, kerr.InvalidProducerIDMapping) {
		t.Fatalf("EndTxn of an unknown id: %v", err)
	}
	// A new producer fences this one: its ongoing transaction is aborted with a
	// bumped epoch, and it is told to retry.
	if _, err := txnInit(t, co, id, 4, 10000, -1, -1); !errors.Is(err, kerr.ConcurrentTransactions) {
		t.Fatalf("InitProducerId over an ongoing transaction: %v", err)
	}
	d = txnDescribe(t, co, id)
	if d.ProducerEpoch != 2 || (d.State != "PrepareAbort" && d.State != "CompleteAbort") {
		t.Fatalf("after the fence: %+v", d)
	}
	if err := txnEnd(t, co, 3, id, pid, 1, true); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("commit by the fenced producer: %v", err)
	}

	// The state survives a restart: it is loaded from __transaction_state.
	bid := c.IDs()[0]
	c.Stop(bid)
	c.Restart(bid)
	cl2 := c.Client()
	co2, _ := txnCoordinator(t, cl2, id)
	var d2 kmsg.DescribeTransactionsResponseTransactionState
	brokertest.Eventually(t, 30*time.Second, func() error {
		d2 = txnDescribe(t, co2, id)
		return kerr.ErrorForCode(d2.ErrorCode)
	})
	if d2.ProducerID != pid || d2.ProducerEpoch != 2 || (d2.State != "PrepareAbort" && d2.State != "CompleteAbort") {
		t.Fatalf("after restart: %+v", d2)
	}
}
