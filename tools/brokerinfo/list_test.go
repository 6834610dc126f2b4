package brokerinfo

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
)

func TestListCountsLeadersAndReplicas(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(3), kfake.SeedTopics(3, "t"))
	for p := int32(0); p < 3; p++ {
		if err := c.MoveTopicPartition("t", p, 0); err != nil {
			t.Fatal(err)
		}
	}
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	opts := &ListOptions{Factory: env.F}
	opts.Output.Format = "json"
	if err := runList(cmdtest.Ctx(t), opts); err != nil {
		t.Fatal(err)
	}
	var got []Broker
	if err := json.Unmarshal(env.Out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("got %d brokers: %+v", len(got), got)
	}
	controllers := 0
	for i, b := range got {
		if b.ID != int32(i) || b.Endpoint != c.ListenAddrs()[i] || b.Status != "up" || b.Replicas != 3 {
			t.Errorf("broker %d: %+v", i, b)
		}
		if want := map[bool]int{true: 3, false: 0}[i == 0]; b.Leaders != want {
			t.Errorf("broker %d leads %d, want %d", i, b.Leaders, want)
		}
		if b.Controller {
			controllers++
		}
	}
	if controllers != 1 {
		t.Errorf("%d controllers marked", controllers)
	}
}

func TestListShowsBrokerDownThatHostsReplicas(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(3))
	cmdtest.FakeMetadata(c, 0, []int32{0, 1}, map[string][]cmdtest.Partition{"t": {
		{Leader: 0, Replicas: []int32{0, 1, 2}, ISR: []int32{0, 1}},
	}})
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	if err := runList(cmdtest.Ctx(t), &ListOptions{Factory: env.F}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(env.Out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("want header + 3 rows:\n%s", env.Out)
	}
	if f := strings.Fields(lines[3]); f[0] != "2" || f[1] != "-" || f[3] != "down" {
		t.Errorf("row for broker 2: %q", lines[3])
	}
	if f := strings.Fields(lines[1]); f[0] != "0" || f[4] != "*" || f[5] != "1" {
		t.Errorf("row for broker 0: %q", lines[1])
	}
}

func TestListFlags(t *testing.T) {
	ios, _, _, _ := cmdutil.Test()
	f := cmdutil.NewFactory(ios, cmdutil.BuildInfo{})
	var got *ListOptions
	cmd := NewListCommand(f, func(_ context.Context, o *ListOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"-o", "yaml"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Output.Format != "yaml" {
		t.Errorf("format %q", got.Output.Format)
	}
	cmd.SetArgs([]string{"extra"})
	if err := cmd.Execute(); err == nil {
		t.Error("accepted an argument")
	}
}
