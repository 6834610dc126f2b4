package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAuthorizerTransactions: the transaction APIs need Kafka's ACLs:
// TransactionalId WRITE (DESCRIBE to find and describe it), Topic WRITE for
// the partitions added, Group READ for the offsets added; the broker-only
// AddPartitionsToTxn v4 needs CLUSTER_ACTION.
func TestAuthorizerTransactions(t *testing.T) {
	c := newACLCluster(t, 1, txnProps)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := kadm.NewClient(c.as("admin"))
	for _, topic := range []string{"tx-acl", "tx-acl-other"} {
		if _, err := admin.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	// admin brings __transaction_state up.
	if _, err := txnInit(t, c.as("admin"), "admin-tx", 4, 10000, -1, -1); err != nil {
		t.Fatalf("admin InitProducerId: %v", err)
	}

	alice := c.as("alice")
	// Refused already when finding the coordinator (TransactionalId DESCRIBE),
	// and by InitProducerId itself when sent to the broker directly.
	id := "tx-alice"
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = &id, 10000
	if _, err := init.RequestWith(ctx, alice); !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("InitProducerId without ACLs: %v", err)
	}
	if resp, err := init.RequestWith(ctx, alice.Broker(int(c.IDs()[0]))); err != nil ||
		!errors.Is(kerr.ErrorForCode(resp.ErrorCode), kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("InitProducerId without ACLs, to the broker: %+v %v", resp, err)
	}
	c.allow(ctx, kadm.NewACLs().Allow("User:alice").TransactionalIDs("tx-alice").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpWrite))
	c.allow(ctx, kadm.NewACLs().Allow("User:alice").Topics("tx-acl").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpWrite))
	r, err := txnInit(t, alice, "tx-alice", 4, 10000, -1, -1)
	if err != nil {
		t.Fatalf("InitProducerId with TransactionalId WRITE: %v", err)
	}
	pid, epoch := r.ProducerID, r.ProducerEpoch
	if errs := txnAdd(t, alice, 3, "tx-alice", pid, epoch, "tx-acl-other", 0); !errors.Is(errs[0], kerr.TopicAuthorizationFailed) {
		t.Fatalf("AddPartitionsToTxn without Topic WRITE: %v", errs)
	}
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = "tx-alice", pid, epoch, "tx-acl-group"
	if resp, err := ao.RequestWith(ctx, alice); err != nil || !errors.Is(kerr.ErrorForCode(resp.ErrorCode), kerr.GroupAuthorizationFailed) {
		t.Fatalf("AddOffsetsToTxn without Group READ: %+v %v", resp, err)
	}
	if errs := txnAdd(t, alice, 3, "tx-alice", pid, epoch, "tx-acl", 0); errs[0] != nil {
		t.Fatalf("AddPartitionsToTxn with ACLs: %v", errs)
	}
	if err := txnEnd(t, alice, 3, "tx-alice", pid, epoch, false); err != nil {
		t.Fatalf("EndTxn with ACLs: %v", err)
	}

	// bob may not see alice's transactional id; alice may.
	bob := c.as("bob")
	if d := txnDescribe(t, bob.Broker(int(c.IDs()[0])), "tx-alice"); !errors.Is(kerr.ErrorForCode(d.ErrorCode), kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("bob describes: %+v", d)
	}
	if d := txnDescribe(t, alice, "tx-alice"); d.ErrorCode != 0 || d.ProducerID != pid {
		t.Fatalf("alice describes: %+v", d)
	}
	list := func(cl *kgo.Client) []string {
		resp, err := kmsg.NewPtrListTransactionsRequest().RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("ListTransactions: %+v %v", resp, err)
		}
		var ids []string
		for _, s := range resp.TransactionStates {
			ids = append(ids, s.TransactionalID)
		}
		return ids
	}
	if ids := list(bob); len(ids) != 0 {
		t.Fatalf("bob lists %v", ids)
	}
	if ids := list(alice); len(ids) != 1 || ids[0] != "tx-alice" {
		t.Fatalf("alice lists %v", ids)
	}
}
