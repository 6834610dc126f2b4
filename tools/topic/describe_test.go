package topic

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update to accept)\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// ordersCluster is a 3-broker kfake with topic "orders" whose leaders sit on
// brokers 0, 1 and 2, five records in partition 0 and one config override.
func ordersCluster(t *testing.T) (*kfake.Cluster, *cmdtest.Env) {
	t.Helper()
	c := cmdtest.Cluster(t, kfake.NumBrokers(3), kfake.SeedTopics(3, "orders"))
	for p := int32(0); p < 3; p++ {
		if err := c.MoveTopicPartition("orders", p, p); err != nil {
			t.Fatal(err)
		}
	}
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	ctx := cmdtest.Ctx(t)
	cl, err := env.F.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := 0; i < 5; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(cl)
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kmsgString("3600000")}}, "orders"); err != nil {
		t.Fatal(err)
	}
	return c, env
}

// fakeOrders reports orders with partition 1 led by a non-preferred replica
// and out-of-sync broker 2, and partition 2 down to one in-sync replica with
// broker 1 offline.
func fakeOrders(c *kfake.Cluster) {
	cmdtest.FakeMetadata(c, 1, nil, map[string][]cmdtest.Partition{"orders": {
		{Leader: 0, Epoch: 3, Replicas: []int32{0, 1, 2}, ISR: []int32{0, 1, 2}},
		{Leader: 1, Epoch: 7, Replicas: []int32{2, 1, 0}, ISR: []int32{1, 0}},
		{Leader: 2, Epoch: 2, Replicas: []int32{2, 0, 1}, ISR: []int32{2}, Offline: []int32{1}},
	}})
}

var idRE = regexp.MustCompile(`"id": "[^"]*"`)

func TestDescribeGolden(t *testing.T) {
	for _, format := range []string{"table", "json", "yaml"} {
		t.Run(format, func(t *testing.T) {
			c, env := ordersCluster(t)
			fakeOrders(c)
			opts := &DescribeOptions{Factory: env.F, Topics: []string{"orders"}}
			opts.Output.Format = format
			if err := runDescribe(cmdtest.Ctx(t), opts); err != nil {
				t.Fatalf("describe: %v\n%s", err, env.ErrOut)
			}
			got := idRE.ReplaceAllString(env.Out.String(), `"id": "ID"`)
			got = regexp.MustCompile(`(?m)^  id: .*$`).ReplaceAllString(got, "  id: ID")
			golden(t, "describe."+format+".golden", got)
		})
	}
}

func TestDescribeRealKfake(t *testing.T) {
	_, env := ordersCluster(t)
	topics, err := loadWith(t, env.F, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if len(topics) != 1 || topics[0].PartitionCount != 3 || topics[0].ReplicationFactor != 3 {
		t.Fatalf("got %+v", topics)
	}
	tp := topics[0]
	if len(tp.Overrides) != 1 || tp.Overrides[0] != (Config{Name: "retention.ms", Value: "3600000"}) {
		t.Errorf("overrides = %+v, want retention.ms=3600000", tp.Overrides)
	}
	for _, p := range tp.Partitions {
		if p.Leader != p.Partition || !p.PreferredLeader || len(p.OSR) != 0 || len(p.ISR) != 3 {
			t.Errorf("partition %d: %+v", p.Partition, p)
		}
	}
	if hw := tp.Partitions[0].HighWatermark; hw != 5 {
		t.Errorf("partition 0 high watermark = %d, want 5", hw)
	}
	if ls := tp.Partitions[0].LogStartOffset; ls != 0 {
		t.Errorf("partition 0 log start = %d, want 0", ls)
	}
}

func loadWith(t *testing.T, f *cmdutil.Factory, names ...string) ([]Topic, error) {
	t.Helper()
	adm, err := f.Admin()
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	return Load(cmdtest.Ctx(t), adm, names, false)
}

func TestDescribeUnknownTopic(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(1))
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	err := runDescribe(cmdtest.Ctx(t), &DescribeOptions{Factory: env.F, Topics: []string{"nope"}})
	if err == nil || !strings.Contains(err.Error(), `topic "nope" does not exist`) {
		t.Fatalf("err = %v, want a clear does-not-exist error", err)
	}
}

func TestDescribeFilters(t *testing.T) {
	tests := []struct {
		name     string
		set      func(*DescribeOptions)
		want     []int32
		problems bool
	}{
		{"none", func(*DescribeOptions) {}, []int32{0, 1, 2}, false},
		{"under-replicated", func(o *DescribeOptions) { o.UnderReplicated = true }, []int32{1, 2}, true},
		{"unavailable", func(o *DescribeOptions) { o.Unavailable = true }, []int32{2}, true},
		{"under-min-isr", func(o *DescribeOptions) { o.UnderMinISR = true }, []int32{2}, true},
		{"at-min-isr", func(o *DescribeOptions) { o.AtMinISR = true }, []int32{1}, true},
		{"with-overrides", func(o *DescribeOptions) { o.WithOverrides = true }, []int32{0, 1, 2}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, env := ordersCluster(t)
			// Broker 2 is missing from metadata: partition 2's leader is gone.
			cmdtest.FakeMetadata(c, 0, []int32{0, 1}, map[string][]cmdtest.Partition{"orders": {
				{Leader: 0, Replicas: []int32{0, 1, 2}, ISR: []int32{0, 1, 2}},
				{Leader: 1, Replicas: []int32{1, 2, 0}, ISR: []int32{1, 0}},
				{Leader: 2, Replicas: []int32{2, 0, 1}, ISR: []int32{2}},
			}})
			if err := kadmSetMinISR(t, env.F, "2"); err != nil {
				t.Fatal(err)
			}
			opts := &DescribeOptions{Factory: env.F}
			opts.Output.Format = "json"
			tt.set(opts)
			err := runDescribe(cmdtest.Ctx(t), opts)
			var ee *cmdutil.ExitErr
			if tt.problems != (errors.As(err, &ee) && ee.Code == cmdutil.ExitProblems) {
				t.Fatalf("err = %v, want exit 3: %v", err, tt.problems)
			}
			if !tt.problems && err != nil {
				t.Fatal(err)
			}
			var got []int32
			for _, p := range decodeTopics(t, env.Out.String())[0].Partitions {
				got = append(got, p.Partition)
			}
			if cmdutil.JoinInt32(got) != cmdutil.JoinInt32(tt.want) {
				t.Errorf("partitions %v, want %v", got, tt.want)
			}
		})
	}
}

func kadmSetMinISR(t *testing.T, f *cmdutil.Factory, v string) error {
	adm, err := f.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	_, err = adm.AlterTopicConfigs(cmdtest.Ctx(t), []kadm.AlterConfig{{Name: "min.insync.replicas", Value: &v}}, "orders")
	return err
}

func TestDescribeWithOverridesSkipsPlainTopics(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(1), kfake.SeedTopics(1, "plain"))
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	opts := &DescribeOptions{Factory: env.F, WithOverrides: true}
	if err := runDescribe(cmdtest.Ctx(t), opts); err != nil {
		t.Fatal(err)
	}
	if got := env.Out.String(); got != "No matching topics.\n" {
		t.Errorf("got %q", got)
	}
}

func TestDescribeWatchRedrawsOnLeaderChange(t *testing.T) {
	c, env := ordersCluster(t)
	out := &cmdtest.SyncBuffer{}
	env.F.IO.Out = out
	opts := &DescribeOptions{Factory: env.F, Topics: []string{"orders"}, Watch: true, Interval: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(cmdtest.Ctx(t))
	done := make(chan error, 1)
	go func() { done <- runDescribe(ctx, opts) }()
	cmdtest.WaitFor(t, "first drawing", func() bool { return strings.Count(out.String(), "Topic: orders") == 1 })
	if err := c.MoveTopicPartition("orders", 0, 2); err != nil {
		t.Fatal(err)
	}
	cmdtest.WaitFor(t, "redraw after the leader moved", func() bool { return strings.Count(out.String(), "Topic: orders") == 2 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("watch ended with %v", err)
	}
	if n := strings.Count(out.String(), "Topic: orders"); n != 2 {
		t.Errorf("drew %d times, want 2 (only on change)", n)
	}
}

func TestDescribeFlags(t *testing.T) {
	ios, _, _, _ := cmdutil.Test()
	f := cmdutil.NewFactory(ios, cmdutil.BuildInfo{})
	var got *DescribeOptions
	cmd := NewDescribeCommand(f, func(_ context.Context, o *DescribeOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"a", "b", "--under-replicated", "--at-min-isr", "-o", "yaml", "--watch", "--interval", "5s"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Topics, ",") != "a,b" || !got.UnderReplicated || !got.AtMinISR || got.Unavailable ||
		got.Output.Format != "yaml" || !got.Watch || got.Interval != 5*time.Second {
		t.Errorf("parsed %+v", got)
	}
	cmd = NewDescribeCommand(f, func(context.Context, *DescribeOptions) error { return nil })
	cmd.SetArgs([]string{"-o", "xml"})
	var ee *cmdutil.ExitErr
	if err := cmd.Execute(); !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage {
		t.Errorf("-o xml: err = %v, want a usage error", err)
	}
}

func TestDescribeNamesTheLeaderThatDidNotAnswer(t *testing.T) {
	c, env := ordersCluster(t)
	cmdtest.FakeMetadata(c, 0, []int32{0, 1}, map[string][]cmdtest.Partition{"orders": {
		{Leader: 0, Replicas: []int32{0, 1, 2}, ISR: []int32{0, 1, 2}},
		{Leader: 1, Replicas: []int32{1, 2, 0}, ISR: []int32{1, 0}},
		{Leader: 2, Replicas: []int32{2, 0, 1}, ISR: []int32{2}},
	}})
	if err := runDescribe(cmdtest.Ctx(t), &DescribeOptions{Factory: env.F, Topics: []string{"orders"}}); err != nil {
		t.Fatal(err)
	}
	out := env.Out.String()
	if !strings.Contains(out, "partition 2: offsets unavailable: leader 2 did not answer") {
		t.Errorf("output does not name broker 2:\n%s", out)
	}
	if strings.Contains(out, "partition 0:") || strings.Contains(out, "partition 1:") {
		t.Errorf("reachable partitions report errors:\n%s", out)
	}
}
