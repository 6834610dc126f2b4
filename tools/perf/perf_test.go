package perf

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"gopkg.in/yaml.v3"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

type env struct {
	f           *cmdutil.Factory
	out, errOut *bytes.Buffer
}

// newEnv starts a one-broker kfake cluster and a Factory pointing at it.
func newEnv(t *testing.T) *env {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(2))
	if err != nil {
		t.Fatalf("starting kfake: %v", err)
	}
	t.Cleanup(c.Close)
	ios, _, out, errOut := cmdutil.Test()
	f := cmdutil.NewFactory(ios, cmdutil.BuildInfo{Version: "test"})
	f.ConfigPath = filepath.Join(t.TempDir(), "config.yaml")
	f.BrokersFlag = c.ListenAddrs()
	f.ClientTimeout = 5 * time.Second
	return &env{f: f, out: out, errOut: errOut}
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// run executes `perf <args>` the way main does and returns the exit code.
func (e *env) run(t *testing.T, args ...string) int {
	t.Helper()
	e.out.Reset()
	e.errOut.Reset()
	cmd := NewCommand(e.f)
	cmd.SetArgs(args)
	cmd.SetOut(e.out)
	cmd.SetErr(e.errOut)
	cmd.SilenceErrors = true
	cmd.SilenceUsage = true
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return cmdutil.UsageError(err) })
	return cmdutil.ExitCode(e.errOut, cmd.ExecuteContext(testCtx(t)))
}

func (e *env) runJSON(t *testing.T, args ...string) Result {
	t.Helper()
	if code := e.run(t, append(args, "-o", "json")...); code != 0 {
		t.Fatalf("perf %v: exit %d: %s", args, code, e.errOut)
	}
	var r Result
	if err := json.Unmarshal(e.out.Bytes(), &r); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, e.out)
	}
	return r
}

func TestProduceThenConsumeCountsMatch(t *testing.T) {
	e := newEnv(t)
	p := e.runJSON(t, "produce", "--topic", "t1", "--num-records", "3000", "--record-size", "50", "--acks", "1")
	if p.Records != 3000 || p.Bytes != 150000 {
		t.Fatalf("produced %d records, %d bytes; want 3000, 150000", p.Records, p.Bytes)
	}
	if p.Latency == nil || p.Latency.Max <= 0 || p.Latency.P50 > p.Latency.P99 || p.Latency.P99 > p.Latency.Max {
		t.Fatalf("implausible produce latency %+v", p.Latency)
	}
	if p.Seconds <= 0 || p.RecordsPerSec <= 0 || p.MBPerSec <= 0 {
		t.Fatalf("missing rates: %+v", p)
	}

	c := e.runJSON(t, "consume", "--topic", "t1", "--num-records", "3000")
	if c.Records != 3000 || c.Bytes != 150000 {
		t.Fatalf("consumed %d records, %d bytes; want 3000, 150000", c.Records, c.Bytes)
	}
	if c.Fetches <= 0 || c.Latency == nil {
		t.Fatalf("no fetch latency in %+v", c)
	}
}

func TestProduceCreatesTopicWithPartitions(t *testing.T) {
	e := newEnv(t)
	e.runJSON(t, "produce", "--topic", "made", "--num-records", "10", "--partitions", "3", "--replication-factor", "1")
	adm, err := e.f.Admin()
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	topics, err := adm.ListTopics(testCtx(t), "made")
	if err != nil {
		t.Fatal(err)
	}
	if got := len(topics["made"].Partitions); got != 3 {
		t.Fatalf("topic has %d partitions, want 3", got)
	}
	offsets, err := adm.ListEndOffsets(testCtx(t), "made")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	offsets.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != 10 {
		t.Fatalf("topic holds %d records, want 10", total)
	}
}

func TestProduceEveryAcksAndCodec(t *testing.T) {
	e := newEnv(t)
	for _, acks := range []string{"all", "1", "0"} {
		for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
			r := e.runJSON(t, "produce", "--topic", "codecs", "--num-records", "200", "--acks", acks, "--compression", codec)
			if r.Records != 200 {
				t.Fatalf("acks=%s compression=%s: %d records acknowledged, want 200", acks, codec, r.Records)
			}
		}
	}
	c := e.runJSON(t, "consume", "--topic", "codecs", "--num-records", "3000")
	if c.Records != 3000 {
		t.Fatalf("consumed %d, want 3000", c.Records)
	}
}

func TestConsumeAsGroupMember(t *testing.T) {
	e := newEnv(t)
	e.runJSON(t, "produce", "--topic", "g", "--num-records", "500", "--record-size", "10")
	c := e.runJSON(t, "consume", "--topic", "g", "--num-records", "500", "--group", "perf-g")
	if c.Records != 500 || c.Bytes != 5000 {
		t.Fatalf("consumed %d records %d bytes, want 500, 5000", c.Records, c.Bytes)
	}
	if c.RebalanceSeconds <= 0 {
		t.Fatalf("group join time not reported: %+v", c)
	}
	d := e.runJSON(t, "consume", "--topic", "g", "--num-records", "500")
	if d.RebalanceSeconds != 0 {
		t.Fatalf("rebalance time reported without a group: %+v", d)
	}
}

func TestConsumeStopsWhenIdle(t *testing.T) {
	e := newEnv(t)
	e.runJSON(t, "produce", "--topic", "short", "--num-records", "40", "--record-size", "10")
	e.f.ClientTimeout = time.Second
	c := e.runJSON(t, "consume", "--topic", "short")
	if c.Records != 40 {
		t.Fatalf("consumed %d, want 40", c.Records)
	}
	code := e.run(t, "consume", "--topic", "short", "--num-records", "41", "-o", "json")
	if code != cmdutil.ExitError {
		t.Fatalf("asking for more records than exist: exit %d, want %d", code, cmdutil.ExitError)
	}
	if !strings.Contains(e.errOut.String(), "consumed 40 of 41") {
		t.Fatalf("error does not say how many arrived: %s", e.errOut)
	}
	var r Result
	if err := json.Unmarshal(e.out.Bytes(), &r); err != nil || r.Records != 40 {
		t.Fatalf("partial result %+v (%v)", r, err)
	}
}

func TestConsumeMissingTopic(t *testing.T) {
	e := newEnv(t)
	if code := e.run(t, "consume", "--topic", "nope"); code != cmdutil.ExitError {
		t.Fatalf("exit %d, want %d", code, cmdutil.ExitError)
	}
	if !strings.Contains(e.errOut.String(), "does not exist") {
		t.Fatalf("unclear error: %s", e.errOut)
	}
}

func TestPayloadFile(t *testing.T) {
	e := newEnv(t)
	path := filepath.Join(t.TempDir(), "payloads")
	if err := os.WriteFile(path, []byte("a\nbb\n\nccc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := e.runJSON(t, "produce", "--topic", "pf", "--num-records", "300", "--payload-file", path)
	if p.Records != 300 || p.Bytes < 300 || p.Bytes > 900 || p.Bytes == 300 || p.Bytes == 900 {
		t.Fatalf("300 records of 1-3 bytes chosen at random came to %d records, %d bytes", p.Records, p.Bytes)
	}
	c := e.runJSON(t, "consume", "--topic", "pf", "--num-records", "300")
	if c.Bytes != p.Bytes {
		t.Fatalf("consumed %d bytes, produced %d", c.Bytes, p.Bytes)
	}
}

func TestYAMLAndTableOutput(t *testing.T) {
	e := newEnv(t)
	if code := e.run(t, "produce", "--topic", "y", "--num-records", "20", "-o", "yaml"); code != 0 {
		t.Fatalf("exit %d: %s", code, e.errOut)
	}
	var r Result
	if err := yaml.Unmarshal(e.out.Bytes(), &r); err != nil || r.Records != 20 || r.Latency == nil {
		t.Fatalf("yaml output %q: %+v, %v", e.out, r, err)
	}
	if code := e.run(t, "produce", "--topic", "y", "--num-records", "20"); code != 0 {
		t.Fatalf("exit %d: %s", code, e.errOut)
	}
	for _, want := range []string{"records/s", "MB/s", "latency p99.9 ms"} {
		if !strings.Contains(e.out.String(), want) {
			t.Fatalf("table lacks %q:\n%s", want, e.out)
		}
	}
}

func TestProgressOnlyOnTerminal(t *testing.T) {
	e := newEnv(t)
	e.runJSON(t, "produce", "--topic", "tty", "--num-records", "50")
	if e.errOut.Len() != 0 {
		t.Fatalf("progress written without a terminal: %q", e.errOut)
	}
	e.f.IO.SetTTY(false, true)
	e.runJSON(t, "produce", "--topic", "tty", "--num-records", "50")
	if !strings.Contains(e.errOut.String(), "produced 50/50 records") {
		t.Fatalf("no progress on a terminal: %q", e.errOut)
	}
	if strings.Contains(e.out.String(), "produced") {
		t.Fatalf("progress leaked into stdout: %q", e.out)
	}
}

func TestBadFlagsAreUsageErrors(t *testing.T) {
	e := newEnv(t)
	for _, args := range [][]string{
		{"produce"},
		{"produce", "--topic", "x", "--acks", "2"},
		{"produce", "--topic", "x", "--compression", "brotli"},
		{"produce", "--topic", "x", "--throughput", "0"},
		{"produce", "--topic", "x", "--record-size", "0"},
		{"produce", "--topic", "x", "--num-records", "-1"},
		{"produce", "--topic", "x", "--num-records", "many"},
		{"produce", "--topic", "x", "--acks", "1", "--idempotent"},
		{"produce", "--topic", "x", "--max-in-flight", "3"},
		{"produce", "--topic", "x", "--batch-max-bytes", "10"},
		{"produce", "--topic", "x", "--linger", "2m"},
		{"produce", "--topic", "x", "--partitions", "0"},
		{"produce", "--topic", "x", "--record-size", "10", "--payload-file", "f"},
		{"produce", "--topic", "x", "--payload-file", filepath.Join(t.TempDir(), "missing")},
		{"produce", "--topic", "x", "-o", "xml"},
		{"consume"},
		{"consume", "--topic", "x", "--num-records", "-5"},
		{"consume", "--topic", "x", "--fetch-max-bytes", "0"},
		{"consume", "--topic", "x", "--fetch-max-partition-bytes", "-1"},
		{"consume", "--topic", "x", "-o", "csv"},
		{"consume", "--topic", "x", "extra"},
	} {
		if code := e.run(t, args...); code != cmdutil.ExitUsage {
			t.Errorf("perf %v: exit %d, want %d (%s)", args, code, cmdutil.ExitUsage, e.errOut)
		}
	}
}

func TestAcksOneAllowsMaxInFlight(t *testing.T) {
	e := newEnv(t)
	r := e.runJSON(t, "produce", "--topic", "mif", "--num-records", "100", "--acks", "1", "--max-in-flight", "3")
	if r.Records != 100 {
		t.Fatalf("acknowledged %d, want 100", r.Records)
	}
}

// virtualClock advances only when slept on, so the throughput cap can be
// checked by counting what it lets through in virtual time.
type virtualClock struct {
	now   time.Time
	slept time.Duration
}

func (c *virtualClock) Now() time.Time { return c.now }

func (c *virtualClock) Sleep(_ context.Context, d time.Duration) error {
	c.now = c.now.Add(d)
	c.slept += d
	return nil
}

func TestThrottleAdmitsRateTimesElapsed(t *testing.T) {
	for _, rate := range []float64{1, 250, 10_000} {
		c := &virtualClock{now: time.Unix(0, 0)}
		thr := newThrottle(rate, c)
		window := 3 * time.Second
		var admitted int64
		for {
			if err := thr.wait(context.Background(), admitted); err != nil {
				t.Fatal(err)
			}
			if c.now.Sub(thr.start) >= window {
				break
			}
			admitted++
		}
		want := int64(rate * window.Seconds())
		if admitted != want {
			t.Fatalf("rate %v: %d records admitted in %s, want %d", rate, admitted, window, want)
		}
	}
}

func TestThrottleDoesNotBurstAfterStall(t *testing.T) {
	thr := newThrottle(100, &virtualClock{now: time.Unix(0, 0)})
	if d := thr.delay(50, 2*time.Second); d != 0 {
		t.Fatalf("a late record waits %s", d)
	}
	if d := thr.delay(300, time.Second); d != 2*time.Second {
		t.Fatalf("record 300 at 100/s after 1s waits %s, want 2s", d)
	}
	if d := newThrottle(-1, realClock{}).delay(1_000_000, 0); d != 0 {
		t.Fatalf("uncapped throttle waits %s", d)
	}
}

func TestProduceHonoursThroughputCap(t *testing.T) {
	e := newEnv(t)
	c := &virtualClock{now: time.Unix(0, 0)}
	o := &ProduceOptions{
		Topic: "capped", NumRecords: 500, RecordSize: 10, Acks: "1", Compression: "none",
		Throughput: 100, BatchMaxBytes: 1_000_012, Linger: time.Millisecond,
		Partitions: -1, ReplicationFactor: -1, Output: cmdutil.OutputFlag{Format: "json"}, clock: c,
	}
	if err := RunProduce(testCtx(t), e.f, o); err != nil {
		t.Fatal(err)
	}
	// 500 records at 100/s: the last one is due 4.99 s after the first.
	if want := 4990 * time.Millisecond; c.slept < want-time.Millisecond {
		t.Fatalf("cap of 100 records/s let 500 records through in %s of virtual time, want %s", c.slept, want)
	}
	cl, err := e.f.Client(kgo.ConsumeTopics("capped"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	offsets, err := adm.ListEndOffsets(testCtx(t), "capped")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	offsets.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != 500 {
		t.Fatalf("topic holds %d records, want 500", total)
	}
}

func TestConsumeGroupNotAssignedInTime(t *testing.T) {
	e := newEnv(t)
	e.runJSON(t, "produce", "--topic", "late", "--num-records", "10")
	// A joining member needs several round trips; a nanosecond is never enough.
	o := &ConsumeOptions{Topic: "late", Group: "late-g", Timeout: time.Nanosecond,
		FetchMaxBytes: 1 << 20, FetchMaxPartitionBytes: 1 << 20}
	err := RunConsume(testCtx(t), e.f, o)
	if err == nil || !strings.Contains(err.Error(), "assigned no partitions") {
		t.Fatalf("got %v, want an error saying the group assigned nothing", err)
	}
}

func TestProduceTransactional(t *testing.T) {
	e := newEnv(t)
	p := e.runJSON(t, "produce", "--topic", "tx", "--num-records", "250", "--record-size", "10",
		"--transactional", "--transaction-size", "100", "--transactional-id", "perf-tx")
	if p.Records != 250 || p.Transactions != 3 {
		t.Fatalf("produced %d records in %d transactions; want 250 in 3", p.Records, p.Transactions)
	}
	adm, err := e.f.Admin()
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	// Every transaction is committed: the last stable offsets are the log ends,
	// which hold the 250 records and one marker per transaction and partition.
	stable, err := adm.ListCommittedOffsets(testCtx(t), "tx")
	if err != nil {
		t.Fatal(err)
	}
	end, err := adm.ListEndOffsets(testCtx(t), "tx")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	end.Each(func(o kadm.ListedOffset) {
		total += o.Offset
		if s, _ := stable.Lookup(o.Topic, o.Partition); s.Offset != o.Offset {
			t.Errorf("partition %d: last stable offset %d, log end %d", o.Partition, s.Offset, o.Offset)
		}
	})
	if total < 250+3 {
		t.Fatalf("log ends sum to %d, want at least 253", total)
	}
	if code := e.run(t, "produce", "--topic", "tx", "--num-records", "5", "--transactional", "--acks", "1"); code != cmdutil.ExitUsage {
		t.Fatalf("--transactional with --acks 1: exit %d", code)
	}
}
