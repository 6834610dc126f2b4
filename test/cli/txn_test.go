package cli

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/ktoolhq/ktool/broker/brokertest"
	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
	"github.com/ktoolhq/ktool/tools/txn"
)

// txnRecords produces values tag-0..tag-(n-1) to topic/0 in one transaction
// of cl, committed when commit, else left open.
func txnRecords(t *testing.T, cl *kgo.Client, topic, tag string, n int, commit bool) {
	t.Helper()
	ctx := cmdtest.Ctx(t)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(tag + "-" + strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if commit {
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
	}
}

// txnOpts make a transactional producer of id writing to chosen partitions.
func txnOpts(id string) []kgo.Opt {
	return []kgo.Opt{kgo.TransactionalID(id), kgo.TransactionTimeout(60 * time.Second), kgo.RecordPartitioner(kgo.ManualPartitioner())}
}

// hangingTxn leaves a transaction open on topic/0 between two committed ones:
// offsets 0-2 committed (marker 3), 4-5 open, 6-7 committed (marker 8). It
// returns the last stable offset to expect: 4, where the open one starts.
func hangingTxn(t *testing.T, client func(opts ...kgo.Opt) *kgo.Client, topic string) int64 {
	t.Helper()
	txnRecords(t, client(txnOpts("before")...), topic, "before", 3, true)
	txnRecords(t, client(txnOpts("hanging")...), topic, "hanging", 2, false)
	txnRecords(t, client(txnOpts("after")...), topic, "after", 2, true)
	return 4
}

// stableOffsets are the partition's last stable offset and high watermark.
func stableOffsets(t *testing.T, adm *kadm.Client, topic string) (lso, hw int64) {
	t.Helper()
	committed, err := adm.ListCommittedOffsets(cmdtest.Ctx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	end, err := adm.ListEndOffsets(cmdtest.Ctx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := committed.Lookup(topic, 0)
	e, _ := end.Lookup(topic, 0)
	return c.Offset, e.Offset
}

// readCommitted is what a read_committed consumer reads of topic/0 within a
// few seconds.
func readCommitted(t *testing.T, client func(opts ...kgo.Opt) *kgo.Client, topic string, want int) []string {
	t.Helper()
	cl := client(kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var got []string
	for len(got) < want && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// committedValues is what read_committed reads of hangingTxn's records once the
// hanging transaction is aborted; its records would come before after-0.
var committedValues = []string{"before-0", "before-1", "before-2", "after-0", "after-1"}

// An operator finds a hanging transaction by the last stable offset that
// does not move, looks at the partition's producers and aborts it with
// `ktool txn abort --start-offset`: the last stable offset reaches the high
// watermark and read_committed consumers read past it, without its records.
func TestTxnAbortHanging(t *testing.T) {
	for _, store := range brokertest.Stores {
		t.Run(string(store), func(t *testing.T) {
			c := brokertest.NewCluster(t, 3, brokertest.WithStore(store))
			env := cmdtest.NewEnv(t, c.Addrs())
			env.F.ClientTimeout = 15 * time.Second
			const topic = "payments"
			if _, err := c.Admin().CreateTopic(cmdtest.Ctx(t), 1, 3, nil, topic); err != nil {
				t.Fatal(err)
			}
			start := hangingTxn(t, c.Client, topic)
			adm := c.Admin()
			// EndTransaction returns before the markers are written.
			brokertest.Eventually(t, 10*time.Second, func() error {
				if lso, hw := stableOffsets(t, adm, topic); lso != start || hw != 9 {
					return errorf("before the abort: last stable offset %d, high watermark %d; want %d, 9", lso, hw, start)
				}
				return nil
			})
			if got := readCommitted(t, c.Client, topic, 4); len(got) != 3 {
				t.Fatalf("read_committed before the abort read %v, want only the 3 records below the hanging transaction", got)
			}

			var producers []txn.Producer
			if err := run(t, env, txn.NewDescribeProducersCommand(env.F, nil), &producers, "--topic", topic, "--partition", "0", "-o", "json"); err != nil {
				t.Fatalf("describe-producers: %v: %s", err, env.ErrOut)
			}
			open := slices.IndexFunc(producers, func(p txn.Producer) bool { return p.CurrentTxnStartOffset == start })
			if len(producers) != 3 || open < 0 {
				t.Fatalf("describe-producers: %+v", producers)
			}

			if err := run(t, env, txn.NewAbortCommand(env.F, nil), nil, "--topic", topic, "--partition", "0", "--start-offset", "3"); err == nil ||
				!strings.Contains(err.Error(), "no open transaction starting at offset 3") {
				t.Fatalf("abort at the marker's offset: %v", err)
			}
			var aborted txn.Aborted
			if err := run(t, env, txn.NewAbortCommand(env.F, nil), &aborted, "--topic", topic, "--partition", "0",
				"--start-offset", strconv.FormatInt(start, 10), "-o", "json"); err != nil {
				t.Fatalf("abort: %v: %s", err, env.ErrOut)
			}
			p := producers[open]
			if aborted.ProducerID != p.ProducerID || aborted.ProducerEpoch != p.ProducerEpoch || aborted.StartOffset != start {
				t.Fatalf("aborted %+v, want producer %+v", aborted, p)
			}
			brokertest.Eventually(t, 10*time.Second, func() error {
				if lso, hw := stableOffsets(t, adm, topic); lso != hw || hw != 10 {
					return errorf("last stable offset %d, high watermark %d; want both 10 (after the abort marker)", lso, hw)
				}
				return nil
			})
			if got := readCommitted(t, c.Client, topic, len(committedValues)); !slices.Equal(got, committedValues) {
				t.Fatalf("read_committed after the abort read %v, want %v", got, committedValues)
			}
		})
	}
}

// TestTxnAbortNeedsClusterAction: on a cluster with ACLs, `txn abort` needs
// READ on the topic (DescribeProducers) and CLUSTER_ACTION (the marker);
// refused, it fails and the transaction stays open.
func TestTxnAbortNeedsClusterAction(t *testing.T) {
	c := brokertest.NewCluster(t, 1, brokertest.WithProps(map[string]string{
		"listeners":                            "SASL_PLAINTEXT://127.0.0.1:0",
		"inter.broker.listener.name":           "SASL_PLAINTEXT",
		"sasl.enabled.mechanisms":              "PLAIN",
		"sasl.mechanism.inter.broker.protocol": "PLAIN",
		"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="broker-secret" ` +
			`user_broker="broker-secret" user_admin="admin-secret" user_alice="alice-secret";`,
		"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
		"super.users":           "User:admin",
	}))
	admin := func(opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Addrs()...),
			kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	adm := kadm.NewClient(admin())
	const topic = "acl-payments"
	if _, err := adm.CreateTopic(cmdtest.Ctx(t), 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	start := hangingTxn(t, admin, topic)

	pass := filepath.Join(t.TempDir(), "alice.pass")
	if err := os.WriteFile(pass, []byte("alice-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := cmdtest.NewEnv(t, c.Addrs())
	env.F.ClientTimeout = 15 * time.Second
	env.F.SecurityFlags = cmdutil.Security{SASLMechanism: "PLAIN", SASLUser: "alice", SASLPasswordFile: pass}
	abort := func() error {
		return run(t, env, txn.NewAbortCommand(env.F, nil), nil, "--topic", topic, "--partition", "0", "--start-offset", strconv.FormatInt(start, 10))
	}
	allow := func(b *kadm.ACLBuilder) {
		res, err := adm.CreateACLs(cmdtest.Ctx(t), b.Allow("User:alice").ResourcePatternType(kadm.ACLPatternLiteral))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}

	if err := abort(); err == nil || !strings.Contains(err.Error(), "TOPIC_AUTHORIZATION_FAILED") {
		t.Fatalf("abort without READ on the topic: %v", err)
	}
	allow(kadm.NewACLs().Topics(topic).Operations(kadm.OpRead))
	brokertest.Eventually(t, 10*time.Second, func() error {
		if err := abort(); err == nil || !strings.Contains(err.Error(), "CLUSTER_AUTHORIZATION_FAILED") {
			return errorf("abort without CLUSTER_ACTION: %v", err)
		}
		return nil
	})
	if lso, _ := stableOffsets(t, adm, topic); lso != start {
		t.Fatalf("a refused abort moved the last stable offset to %d", lso)
	}
	allow(kadm.NewACLs().Clusters().Operations(kadm.OpClusterAction))
	brokertest.Eventually(t, 10*time.Second, abort)
	brokertest.Eventually(t, 10*time.Second, func() error {
		if lso, hw := stableOffsets(t, adm, topic); lso != hw || hw != 10 {
			return errorf("after the abort: last stable offset %d, high watermark %d; want both 10", lso, hw)
		}
		return nil
	})
	if got := readCommitted(t, admin, topic, len(committedValues)); !slices.Equal(got, committedValues) {
		t.Fatalf("read_committed after the abort read %v, want %v", got, committedValues)
	}
}
