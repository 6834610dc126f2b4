package compat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/brokerproc"
	"github.com/ktoolhq/ktool/internal/brokerproc/proctest"
	"github.com/ktoolhq/ktool/internal/testbin"
)

// The binary under test is built on first use (internal/testbin), so a run
// where every client is missing (and so every test skips) builds nothing;
// $KTOOL_COMPAT_BIN (or $KTOOL_TEST_BIN) names a prebuilt one instead.
var (
	buildOnce sync.Once
	ktoolBin  string
	buildErr  error
	cleanup   = func() {}
)

func TestMain(m *testing.M) {
	if bin := os.Getenv("KTOOL_COMPAT_BIN"); bin != "" {
		os.Setenv("KTOOL_TEST_BIN", bin)
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// ktool returns the binary under test, building it the first time.
func ktool() (string, error) {
	buildOnce.Do(func() { ktoolBin, cleanup, buildErr = testbin.Build() })
	return ktoolBin, buildErr
}

// needKcat returns the kcat command, or skips the test.
func needKcat(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat (librdkafka's CLI) is not installed: run test/compat/setup.sh to install it; librdkafka compatibility was NOT tested")
	}
	return p
}

// needKafkajs returns node and the directory holding compat.js, or skips the test.
func needKafkajs(t *testing.T) (node, dir string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed; kafkajs compatibility was NOT tested")
	}
	dir, err = filepath.Abs("kafkajs")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "kafkajs", "package.json")); err != nil {
		t.Skip("test/compat/kafkajs/node_modules is missing: run test/compat/setup.sh (npm ci); kafkajs compatibility was NOT tested")
	}
	return node, dir
}

// syncBuffer collects a child's output from the copying goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// broker is one `ktool broker start` child process (internal/brokerproc).
type broker struct {
	*brokerproc.Broker
}

// newBroker starts broker id on a free port; it is stopped when the test ends
// and its log is printed if the test failed.
func newBroker(t *testing.T, id int32, args ...string) *broker {
	t.Helper()
	bin, err := ktool()
	if err != nil {
		t.Fatal(err)
	}
	return &broker{proctest.Broker(t, brokerproc.Spec{Bin: bin, ID: id, Dir: t.TempDir(), Args: args}, 30*time.Second)}
}

// startStandalone runs one broker on the embedded coordination store. A group
// forms at once (no initial rebalance delay) so the group tests stay short.
func startStandalone(t *testing.T, extra ...string) *broker {
	t.Helper()
	args := append([]string{"--override", "group.initial.rebalance.delay.ms=0"}, extra...)
	return newBroker(t, 0, args...)
}

// cluster is brokers 0..n-1 registered in a real ZooKeeper.
type cluster struct {
	brokers []*broker
}

// startCluster starts a ZooKeeper (skipping the test without one, failing with
// CI=true) and n brokers with Kafka's replication defaults raised to n. overrides
// (key=value) replace the settings below or add to them.
func startCluster(t *testing.T, n int, overrides ...string) *cluster {
	t.Helper()
	bin, err := ktool()
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{
		"zookeeper.session.timeout.ms":     "6000",
		"replica.lag.time.max.ms":          "5000",
		"group.initial.rebalance.delay.ms": "0",
		"default.replication.factor":       strconv.Itoa(n),
		"offsets.topic.replication.factor": strconv.Itoa(n),
		"min.insync.replicas":              "2",
		// The last broker standing cannot hand its leaderships to anyone; as in
		// Kafka it retries controlled shutdown with this backoff before stopping.
		"controlled.shutdown.retry.backoff.ms": "200",
	}
	for _, o := range overrides {
		k, v, ok := strings.Cut(o, "=")
		if !ok {
			t.Fatalf("override %q is not key=value", o)
		}
		settings[k] = v
	}
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		kv = append(kv, k+"="+settings[k])
	}
	pc := proctest.Cluster(t, brokerproc.ClusterSpec{Bin: bin, N: n, FirstID: 0, Overrides: kv, InMemoryLogs: true}, "/compat", 30*time.Second)
	c := &cluster{}
	for _, b := range pc.Brokers() {
		c.brokers = append(c.brokers, &broker{b})
	}
	return c
}

// Addrs lists every broker's address, comma-separated.
func (c *cluster) Addrs() string {
	var out []string
	for _, b := range c.brokers {
		out = append(out, b.Addr())
	}
	return strings.Join(out, ",")
}

// broker returns the broker with id.
func (c *cluster) broker(id int32) *broker {
	for _, b := range c.brokers {
		if b.ID() == id {
			return b
		}
	}
	return nil
}

// kgoClient is a franz-go client for verification, closed when the test ends.
func kgoClient(t testing.TB, addrs string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(strings.Split(addrs, ",")...)}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func adminClient(t testing.TB, addrs string) *kadm.Client {
	t.Helper()
	return kadm.NewClient(kgoClient(t, addrs))
}

// testCtx bounds a test's calls, so a hung broker or client fails the test rather
// than the whole run.
func testCtx(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// createTopic creates topic and fails the test on any error.
func createTopic(t testing.TB, addrs, topic string, partitions int32, replication int16, configs map[string]*string) {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	resp, err := adminClient(t, addrs).CreateTopic(ctx, partitions, replication, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// topicMetadata returns the cluster's metadata once it lists partitions of
// topic, each with a leader. Brokers learn of a new topic through UpdateMetadata,
// so the one asked may not know it yet.
func topicMetadata(t testing.TB, addrs, topic string, partitions int) kadm.Metadata {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	adm := adminClient(t, addrs)
	var md kadm.Metadata
	eventually(t, 30*time.Second, func() error {
		var err error
		if md, err = adm.Metadata(ctx, topic); err != nil {
			return err
		}
		ps := md.Topics[topic].Partitions
		if len(ps) != partitions {
			return fmt.Errorf("metadata lists %d partitions of %s, want %d", len(ps), topic, partitions)
		}
		for _, p := range ps {
			if p.Leader < 0 || p.Err != nil {
				return fmt.Errorf("%s[%d]: leader %d, %v", topic, p.Partition, p.Leader, p.Err)
			}
		}
		return nil
	})
	return md
}

// topicOnEveryBroker waits until each broker of c answers Metadata with every
// partition of topic led. A new topic reaches the brokers' caches one
// UpdateMetadata at a time; a librdkafka consumer that hears "unknown topic"
// from the first broker it asks leaves the subscription unassigned until its
// next metadata refresh, minutes later.
func topicOnEveryBroker(t testing.TB, c *cluster, topic string, partitions int) {
	t.Helper()
	cl := kgoClient(t, c.Addrs())
	ctx := testCtx(t, 30*time.Second)
	for _, b := range c.brokers {
		eventually(t, 30*time.Second, func() error {
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl.Broker(int(b.ID())))
			if err != nil {
				return err
			}
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != partitions {
				return fmt.Errorf("broker %d does not list the %d partitions of %s yet", b.ID(), partitions, topic)
			}
			for _, p := range resp.Topics[0].Partitions {
				if p.ErrorCode != 0 || p.Leader < 0 {
					return fmt.Errorf("broker %d: %s[%d] leader %d, %v", b.ID(), topic, p.Partition, p.Leader, kerr.ErrorForCode(p.ErrorCode))
				}
			}
			return nil
		})
	}
}

// run runs a client command with stdin and returns its stdout; a non-zero exit or
// the context ending fails the test with the command's stderr.
func run(ctx context.Context, t testing.TB, stdin []byte, name string, args ...string) []byte {
	t.Helper()
	stdout, stderr, err := runErr(ctx, stdin, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\nstderr:\n%s", filepath.Base(name), strings.Join(args, " "), err, tail(string(stderr), 40))
	}
	return stdout
}

// runErr is run without failing: it returns the output and the exit error.
func runErr(ctx context.Context, stdin []byte, name string, args ...string) (stdout, stderr []byte, err error) {
	var so, se bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &so, &se
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	if ctx.Err() != nil {
		err = errors.Join(err, ctx.Err())
	}
	return so.Bytes(), se.Bytes(), err
}

// eventually polls f until it returns nil or the deadline passes.
func eventually(t testing.TB, total time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(total)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing after %v: %v", total, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fetchAll reads every record of topic from the start up to the end offsets
// taken when it is called, with franz-go.
func fetchAll(t testing.TB, addrs, topic string) []*kgo.Record {
	t.Helper()
	ctx := testCtx(t, 90*time.Second)
	want := int64(0)
	for _, end := range endOffsets(t, addrs, topic) {
		want += end
	}
	cl := kgoClient(t, addrs, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var out []*kgo.Record
	for int64(len(out)) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of %s: %v", len(out), want, topic, ctx.Err())
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("fetch %s[%d]: %v", topic, p, err)
		})
		out = append(out, fs.Records()...)
	}
	return out
}

// deref reads a client's string that may be null.
func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

// tail is the last lines of a client's output, with runs of one repeated line
// (librdkafka reports each purged message) said once, so the error that
// started them stays in view.
func tail(s string, lines int) string {
	var parts []string
	repeats := 0
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if n := len(parts); n > 0 && parts[n-1] == line {
			repeats++
			continue
		}
		if repeats > 0 {
			parts = append(parts, fmt.Sprintf("        (the line above %d more times)", repeats))
			repeats = 0
		}
		parts = append(parts, line)
	}
	if repeats > 0 {
		parts = append(parts, fmt.Sprintf("        (the line above %d more times)", repeats))
	}
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}
