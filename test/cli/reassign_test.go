package cli

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/broker/brokertest"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
	"github.com/ktoolhq/ktool/tools/configs"
	"github.com/ktoolhq/ktool/tools/reassign"
	"github.com/ktoolhq/ktool/tools/topic"
)

// load writes n records of size bytes to partition p.
func load(t *testing.T, c *brokertest.Cluster, topicName string, p int32, n, size int) {
	t.Helper()
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(256<<10), kgo.ProducerBatchCompression(kgo.NoCompression()))
	defer cl.Close()
	val := []byte(strings.Repeat("x", size))
	for range n {
		cl.Produce(context.Background(), &kgo.Record{Topic: topicName, Partition: p, Value: val}, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func replicasOn(t *testing.T, adm *kadm.Client, broker int32) int {
	t.Helper()
	m, err := adm.Metadata(kadm.WithAuthorizedOps(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, td := range m.Topics {
		for _, pd := range td.Partitions {
			if slices.Contains(pd.Replicas, broker) || pd.Leader == broker {
				n++
			}
		}
	}
	return n
}

func throttleConfigs(t *testing.T, env *cmdtest.Env, topicName string, broker string) []string {
	t.Helper()
	var found []string
	for _, e := range [][]string{{"topic", topicName}, {"broker", broker}} {
		var d configs.Described
		if err := run(t, env, configs.NewCommand(env.F), &d, append([]string{"describe"}, append(e, "-o", "json")...)...); err != nil {
			t.Fatal(err)
		}
		for _, c := range d.Configs {
			if strings.Contains(c.Name, "throttled") {
				found = append(found, c.Name+"="+c.Value)
			}
		}
	}
	return found
}

// An operator adds a broker's worth of replicas to a loaded topic under a
// throttle, cancels a move held back by a throttle, decommissions a broker and
// looks at the balance, on a 3-broker cluster.
func TestReassignment(t *testing.T) {
	// Small replica fetches, so a partition takes several: the throttle shows
	// between them.
	c := brokertest.NewCluster(t, 3, brokertest.WithProps(map[string]string{"replica.fetch.max.bytes": "65536"}))
	env := cmdtest.NewEnv(t, c.Addrs())
	env.F.ClientTimeout = 15 * time.Second
	adm := c.Admin()
	dir := t.TempDir()
	if err := run(t, env, topic.NewCreateCommand(env.F, nil), nil, "moving", "--replica-assignment", "0:1,1:0,0:1,1:0"); err != nil {
		t.Fatal(err)
	}
	for p := range int32(4) {
		load(t, c, "moving", p, 40, 8<<10)
	}

	// Generate a plan that spreads the topic over all three brokers.
	planFile := filepath.Join(dir, "plan.json")
	var g reassign.Generated
	if err := run(t, env, reassign.NewCommand(env.F), &g, "move", "--generate", "--topics", "moving", "--broker-list", "0,1,2", "--output-file", planFile, "-o", "json"); err != nil {
		t.Fatal(err)
	}
	if g.Moves < 2 || g.Moves > 3 || len(g.Proposed.Partitions) == 0 {
		t.Fatalf("plan: %d moves, %+v", g.Moves, g.Proposed)
	}
	for _, l := range g.Loads {
		if l.Replicas < 2 || l.Replicas > 3 {
			t.Errorf("unbalanced after the plan: %+v", g.Loads)
		}
	}

	// A move held back by a 1 byte/s throttle stays in progress; cancel it.
	if err := run(t, env, reassign.NewCommand(env.F), nil, "move", "--execute", "--plan", planFile, "--throttle", "1"); err != nil {
		t.Fatal(err)
	}
	if got := throttleConfigs(t, env, "moving", "2"); len(got) != 4 {
		t.Errorf("throttle configs after --execute --throttle: %v", got)
	}
	var s reassign.Status
	for range 3 {
		time.Sleep(500 * time.Millisecond)
		if err := run(t, env, reassign.NewCommand(env.F), &s, "move", "--verify", "--plan", planFile, "-o", "json"); err != nil {
			t.Fatal(err)
		}
		if s.InProgress == 0 || s.BytesDone >= s.BytesTotal || s.BytesTotal < 320<<10 {
			t.Fatalf("a reassignment under a 1 B/s throttle: %+v", s)
		}
	}
	if err := run(t, env, reassign.NewCommand(env.F), nil, "move", "--cancel", "--plan", planFile); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(env.Out.String(), "Cancelled") {
		t.Errorf("cancel said %q", env.Out)
	}
	if got := throttleConfigs(t, env, "moving", "2"); len(got) != 0 {
		t.Errorf("throttle configs after --cancel: %v", got)
	}
	brokertest.Eventually(t, 10*time.Second, func() error {
		if n := replicasOn(t, adm, 2); n != 0 {
			return errorf("broker 2 still holds %d replicas after the cancel", n)
		}
		return nil
	})

	// Now under a throttle the data fits through, to the end.
	if err := run(t, env, reassign.NewCommand(env.F), nil, "move", "--execute", "--plan", planFile, "--throttle", "64M", "--wait", "--interval", "200ms"); err != nil {
		t.Fatal(err)
	}
	if out := env.Out.String(); !strings.Contains(out, "Every partition is reassigned; throttles removed.") {
		t.Errorf("execute --wait said:\n%s", out)
	}
	if got := throttleConfigs(t, env, "moving", "2"); len(got) != 0 {
		t.Errorf("throttle configs after completion: %v", got)
	}
	if err := run(t, env, reassign.NewCommand(env.F), &s, "move", "--verify", "--plan", planFile, "-o", "json"); err != nil || !s.Done() {
		t.Fatalf("verify after completion: %+v, %v", s, err)
	}

	// Balance is even now.
	var b reassign.Balanced
	if err := run(t, env, reassign.NewBalanceCommand(env.F, nil), &b, "--dry-run", "--topics", "moving", "-o", "json"); err != nil {
		t.Fatal(err)
	}
	if b.Moves != 0 || len(b.Before) != 3 {
		t.Errorf("balance after the move: %+v", b)
	}

	// Decommission broker 0: everything moves off it, and it says so.
	if err := run(t, env, reassign.NewDecommissionCommand(env.F, nil), nil, "0", "--interval", "200ms"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(env.ErrOut.String(), "Broker 0 holds no replicas and leads no partitions: it is safe to stop.") {
		t.Errorf("decommission said:\n%s\n%s", env.Out, env.ErrOut)
	}
	if n := replicasOn(t, adm, 0); n != 0 {
		t.Errorf("broker 0 holds %d replicas after decommission", n)
	}
	_ = os.Remove(planFile)
}
