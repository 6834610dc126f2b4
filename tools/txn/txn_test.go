package txn

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
)

func run(t *testing.T, env *cmdtest.Env, cmd *cobra.Command, args ...string) (string, string, int) {
	t.Helper()
	env.Out.Reset()
	env.ErrOut.Reset()
	cmd.SetArgs(args)
	cmd.SetOut(env.Out)
	cmd.SetErr(env.ErrOut)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.ExecuteContext(cmdtest.Ctx(t))
	code := cmdutil.ExitCode(env.ErrOut, err)
	return env.Out.String(), env.ErrOut.String(), code
}

// openTxn starts a transaction of id with n records on t/0 and leaves it open.
func openTxn(t *testing.T, env *cmdtest.Env, id string, n int) *kgo.Client {
	t.Helper()
	cl, err := env.F.Client(kgo.TransactionalID(id), kgo.TransactionTimeout(60*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic("t"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := cl.ProduceSync(cmdtest.Ctx(t), &kgo.Record{Partition: 0, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	return cl
}

func TestListAndDescribe(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(1), kfake.SeedTopics(2, "t"))
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	openTxn(t, env, "etl-1", 2)
	done := openTxn(t, env, "etl-2", 1)
	if err := done.EndTransaction(cmdtest.Ctx(t), kgo.TryCommit); err != nil {
		t.Fatal(err)
	}

	out, errOut, code := run(t, env, NewListCommand(env.F, nil), "-o", "json")
	if code != 0 {
		t.Fatalf("list: exit %d: %s", code, errOut)
	}
	var listed []Listed
	if err := json.Unmarshal([]byte(out), &listed); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(listed) != 2 || listed[0].TransactionalID != "etl-1" || listed[0].State != "Ongoing" || listed[1].State == "Ongoing" {
		t.Fatalf("list: %+v", listed)
	}
	out, _, code = run(t, env, NewListCommand(env.F, nil), "--state", "ongoing")
	if code != 0 || !strings.Contains(out, "etl-1") || strings.Contains(out, "etl-2") {
		t.Fatalf("list --state ongoing: exit %d\n%s", code, out)
	}
	if _, errOut, code := run(t, env, NewListCommand(env.F, nil), "--state", "bogus"); code != cmdutil.ExitUsage || !strings.Contains(errOut, "Ongoing") {
		t.Fatalf("list --state bogus: exit %d: %s", code, errOut)
	}

	out, errOut, code = run(t, env, NewDescribeCommand(env.F, nil), "etl-1", "-o", "json")
	if code != 0 {
		t.Fatalf("describe: exit %d: %s", code, errOut)
	}
	var ds []Described
	if err := json.Unmarshal([]byte(out), &ds); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(ds) != 1 || ds[0].State != "Ongoing" || ds[0].ProducerID < 0 || ds[0].TimeoutMs != 60000 ||
		len(ds[0].Partitions) != 1 || ds[0].Partitions[0] != "t-0" || ds[0].StartTimestamp <= 0 {
		t.Fatalf("describe: %+v", ds)
	}
	out, _, code = run(t, env, NewDescribeCommand(env.F, nil), "etl-1", "etl-2")
	if code != 0 || !strings.Contains(out, "Ongoing") || !strings.Contains(out, "etl-2") || !strings.Contains(out, "t-0") {
		t.Fatalf("describe table: exit %d\n%s", code, out)
	}
	// An unknown id is a problem found (exit 1), reported in the table.
	out, _, code = run(t, env, NewDescribeCommand(env.F, nil), "nope")
	if code != cmdutil.ExitProblems || !strings.Contains(out, "error") {
		t.Fatalf("describe unknown: exit %d\n%s", code, out)
	}
}

func TestAbortHangingTransaction(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	// Committed data first, so the open transaction does not start at 0.
	before := openTxn(t, env, "before", 3)
	if err := before.EndTransaction(cmdtest.Ctx(t), kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	openTxn(t, env, "hanging", 2)

	adm, err := env.F.Admin()
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ps, err := adm.DescribeProducers(cmdtest.Ctx(t), kadm.TopicsSet{"t": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	var start int64 = -1
	for _, p := range ps["t"].Partitions[0].ActiveProducers {
		start = p.CurrentTxnStartOffset
	}
	if start <= 0 {
		t.Fatalf("no open transaction found: %+v", ps)
	}
	out, errOut, code := run(t, env, NewDescribeProducersCommand(env.F, nil), "--topic", "t", "--partition", "0", "-o", "json")
	var producers []Producer
	if err := json.Unmarshal([]byte(out), &producers); code != 0 || err != nil {
		t.Fatalf("describe-producers: exit %d, %v: %s%s", code, err, out, errOut)
	}
	// kfake lists the producers with an open transaction only.
	if len(producers) != 1 || producers[0].CurrentTxnStartOffset != start || producers[0].Topic != "t" || producers[0].ProducerID < 0 {
		t.Fatalf("describe-producers: %+v", producers)
	}
	out, _, code = run(t, env, NewDescribeProducersCommand(env.F, nil), "--topic", "t", "--partition", "0")
	if code != 0 || !strings.Contains(out, "TXN START OFFSET") || !strings.Contains(out, " "+strconv.FormatInt(start, 10)) {
		t.Fatalf("describe-producers table: exit %d\n%s", code, out)
	}
	if _, _, code := run(t, env, NewDescribeProducersCommand(env.F, nil), "--topic", "t"); code != cmdutil.ExitUsage {
		t.Fatalf("describe-producers without --partition: exit %d", code)
	}
	if _, errOut, code := run(t, env, NewAbortCommand(env.F, nil), "--topic", "t", "--partition", "0", "--start-offset", "1"); code == 0 ||
		!strings.Contains(errOut, "no open transaction starting at offset 1") {
		t.Fatalf("abort at a wrong offset: exit %d: %s", code, errOut)
	}
	if _, errOut, code := run(t, env, NewAbortCommand(env.F, nil), "--topic", "t", "--partition", "0"); code != cmdutil.ExitUsage {
		t.Fatalf("abort without a transaction: exit %d: %s", code, errOut)
	}
	out, errOut, code = run(t, env, NewAbortCommand(env.F, nil), "--topic", "t", "--partition", "0", "--start-offset", strconv.FormatInt(start, 10), "-o", "json")
	if code != 0 {
		t.Fatalf("abort: exit %d: %s", code, errOut)
	}
	var a Aborted
	if err := json.Unmarshal([]byte(out), &a); err != nil || a.StartOffset != start || a.ProducerID < 0 {
		t.Fatalf("abort output %q: %v", out, err)
	}
	// The partition's last stable offset moved past the aborted transaction.
	cmdtest.WaitFor(t, "the last stable offset to pass the aborted transaction", func() bool {
		lso, err := adm.ListEndOffsets(cmdtest.Ctx(t), "t")
		if err != nil {
			return false
		}
		o, _ := lso.Lookup("t", 0)
		committed, err := adm.ListCommittedOffsets(cmdtest.Ctx(t), "t")
		if err != nil {
			return false
		}
		c, _ := committed.Lookup("t", 0)
		return c.Offset == o.Offset && c.Offset > start
	})
}
