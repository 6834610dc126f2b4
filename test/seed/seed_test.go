package seed_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/broker/brokertest"
	"github.com/ktoolhq/ktool/tools/cluster"
	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/controller"
	"github.com/ktoolhq/ktool/tools/election"
	"github.com/ktoolhq/ktool/tools/replicastate"
	"github.com/ktoolhq/ktool/tools/topic"
)

// ktool runs ktool commands in-process against a cluster, the way the
// binary would: the cluster's addresses as --brokers, fresh streams per run.
type ktool struct {
	t     *testing.T
	addrs []string
}

type result struct {
	out, errOut string
	code        int
}

// run executes one command built by newCmd with args.
func (k ktool) run(newCmd func(*cmdutil.Factory) *cobra.Command, args ...string) result {
	k.t.Helper()
	ios, _, out, errOut := cmdutil.Test()
	f := cmdutil.NewFactory(ios, cmdutil.BuildInfo{Version: "test"})
	f.ConfigPath = k.t.TempDir() + "/config.yaml"
	f.BrokersFlag = k.addrs
	f.ClientTimeout = 5 * time.Second
	cmd := newCmd(f)
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := cmd.ExecuteContext(ctx)
	code := cmdutil.ExitCode(errOut, err)
	return result{out: out.String(), errOut: errOut.String(), code: code}
}

// json runs a command with -o json and decodes its output into v.
func (k ktool) json(v any, newCmd func(*cmdutil.Factory) *cobra.Command, args ...string) (int, error) {
	k.t.Helper()
	r := k.run(newCmd, append(args, "-o", "json")...)
	if r.code != cmdutil.ExitOK && r.code != cmdutil.ExitProblems {
		return r.code, fmt.Errorf("exit %d: %s", r.code, r.errOut)
	}
	if err := json.Unmarshal([]byte(r.out), v); err != nil {
		return r.code, fmt.Errorf("decoding %q: %w", r.out, err)
	}
	return r.code, nil
}

func describeCmd(f *cmdutil.Factory) *cobra.Command   { return topic.NewDescribeCommand(f, nil) }
func createCmd(f *cmdutil.Factory) *cobra.Command     { return topic.NewCreateCommand(f, nil) }
func healthCmd(f *cmdutil.Factory) *cobra.Command     { return cluster.NewHealthCommand(f, nil) }
func electCmd(f *cmdutil.Factory) *cobra.Command      { return election.NewCommand(f, nil) }
func controllerCmd(f *cmdutil.Factory) *cobra.Command { return controller.NewCommand(f, nil) }

// describe is `ktool topic describe test -o json`.
func (k ktool) describe() (topic.Topic, error) {
	var ts []topic.Topic
	if _, err := k.json(&ts, describeCmd, "test"); err != nil {
		return topic.Topic{}, err
	}
	if len(ts) != 1 || len(ts[0].Partitions) != 3 {
		return topic.Topic{}, fmt.Errorf("want topic test with 3 partitions, got %+v", ts)
	}
	return ts[0], nil
}

func sorted(xs []int32) []int32 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s
}

// TestSeedWithKtool replays section 1 of the seed with ktool commands alone.
func TestSeedWithKtool(t *testing.T) {
	for _, store := range brokertest.Stores {
		t.Run(string(store), func(t *testing.T) {
			c := brokertest.NewCluster(t, 3, brokertest.WithStore(store), brokertest.WithProps(map[string]string{
				"auto.leader.rebalance.enable": "false",
			}))
			k := ktool{t: t, addrs: c.Addrs()}
			replay(t, c, k)
		})
	}
}

func replay(t *testing.T, c *brokertest.Cluster, k ktool) {
	// 1.2: a topic test with 3 partitions and 3 replicas; leaders spread
	// evenly, each the preferred replica.
	if r := k.run(createCmd, "test", "--partitions", "3", "--replication-factor", "3"); r.code != 0 {
		t.Fatalf("topic create: exit %d: %s", r.code, r.errOut)
	}
	var start topic.Topic
	brokertest.Eventually(t, 15*time.Second, func() error {
		tp, err := k.describe()
		if err != nil {
			return err
		}
		leaders := map[int32]bool{}
		for _, p := range tp.Partitions {
			// 1.3: normally AR = ISR and OSR is empty.
			if !slices.Equal(sorted(p.Replicas), sorted(p.ISR)) || len(p.OSR) != 0 || len(p.Replicas) != 3 {
				return fmt.Errorf("partition %d: AR %v ISR %v OSR %v", p.Partition, p.Replicas, p.ISR, p.OSR)
			}
			if !p.PreferredLeader {
				return fmt.Errorf("partition %d: leader %d is not the preferred %d", p.Partition, p.Leader, p.Replicas[0])
			}
			leaders[p.Leader] = true
		}
		if len(leaders) != 3 {
			return fmt.Errorf("leaders not spread over the 3 brokers: %+v", tp.Partitions)
		}
		start = tp
		return nil
	})
	var h cluster.Health
	brokertest.Eventually(t, 10*time.Second, func() error {
		code, err := k.json(&h, healthCmd)
		if err != nil {
			return err
		}
		if code != cmdutil.ExitOK || !h.Healthy {
			return fmt.Errorf("health exit %d: %+v", code, h)
		}
		return nil
	})

	// 1.4 and 1.5.1: kill broker 0. It leaves every ISR, so OSR shows it;
	// the partition it led gets a new leader from the ISR; health exits 3.
	const dead = int32(0)
	led := slices.IndexFunc(start.Partitions, func(p replicastate.Partition) bool { return p.Leader == dead })
	c.Kill(dead)
	brokertest.Eventually(t, 20*time.Second, func() error {
		tp, err := k.describe()
		if err != nil {
			return err
		}
		for _, p := range tp.Partitions {
			if !slices.Equal(p.OSR, []int32{dead}) || slices.Contains(p.ISR, dead) {
				return fmt.Errorf("partition %d: ISR %v OSR %v, want broker %d out of sync", p.Partition, p.ISR, p.OSR, dead)
			}
			if !slices.Equal(sorted(append(slices.Clone(p.ISR), p.OSR...)), sorted(p.Replicas)) {
				return fmt.Errorf("partition %d: AR %v != ISR %v + OSR %v", p.Partition, p.Replicas, p.ISR, p.OSR)
			}
			if p.Leader == dead || p.Leader < 0 {
				return fmt.Errorf("partition %d: leader %d", p.Partition, p.Leader)
			}
		}
		if p := tp.Partitions[led]; p.LeaderEpoch <= start.Partitions[led].LeaderEpoch {
			return fmt.Errorf("partition %d: leader epoch %d not bumped", p.Partition, p.LeaderEpoch)
		}
		return nil
	})
	brokertest.Eventually(t, 10*time.Second, func() error {
		code, err := k.json(&h, healthCmd)
		if err != nil {
			return err
		}
		if code != cmdutil.ExitProblems || h.Healthy || !slices.Equal(h.BrokersDown, []int32{dead}) || len(h.UnderReplicated) != 3 {
			return fmt.Errorf("health with broker %d down: exit %d, %+v", dead, code, h)
		}
		return nil
	})
	checkTable(t, k, dead)

	// 1.6.2: restart it. It catches up and rejoins every ISR, but the
	// partition it led stays with its new leader: leadership is unbalanced.
	c.Restart(dead)
	brokertest.Eventually(t, 30*time.Second, func() error {
		tp, err := k.describe()
		if err != nil {
			return err
		}
		for _, p := range tp.Partitions {
			if !slices.Equal(sorted(p.Replicas), sorted(p.ISR)) || len(p.OSR) != 0 {
				return fmt.Errorf("partition %d: ISR %v OSR %v, want broker %d back in sync", p.Partition, p.ISR, p.OSR, dead)
			}
		}
		if p := tp.Partitions[led]; p.Leader == dead || p.PreferredLeader {
			return fmt.Errorf("partition %d went back to broker %d without an election", p.Partition, dead)
		}
		return nil
	})
	brokertest.Eventually(t, 10*time.Second, func() error {
		if code, err := k.json(&h, healthCmd); err != nil || code != cmdutil.ExitOK {
			return fmt.Errorf("health after the restart: exit %d, %v, %+v", code, err, h)
		}
		return nil
	})

	// 1.6.1: a preferred election over every partition restores the
	// preferred leaders. The dry run says which partition would move.
	brokertest.Eventually(t, 10*time.Second, func() error {
		var plan election.Plan
		if _, err := k.json(&plan, electCmd, "--preferred", "--all-topic-partitions", "--dry-run"); err != nil {
			return err
		}
		for _, p := range plan.Partitions {
			if p.Topic != "test" {
				continue
			}
			want := "not_needed"
			if p.Partition == int32(led) {
				want = "would_elect"
			}
			if p.Outcome != want {
				return fmt.Errorf("dry run, partition %d: %+v, want %s", p.Partition, p, want)
			}
		}
		return nil
	})
	var results []election.Result
	if code, err := k.json(&results, electCmd, "--preferred", "--all-topic-partitions"); err != nil || code != cmdutil.ExitOK {
		t.Fatalf("elect: exit %d, %v", code, err)
	}
	elected := false
	for _, r := range results {
		if r.Topic == "test" && r.Partition == int32(led) {
			elected = r.Outcome == election.Elected && r.Error == ""
		}
	}
	if !elected {
		t.Errorf("elect did not report partition %d elected: %+v", led, results)
	}
	brokertest.Eventually(t, 10*time.Second, func() error {
		tp, err := k.describe()
		if err != nil {
			return err
		}
		for i, p := range tp.Partitions {
			if !p.PreferredLeader || p.Leader != start.Partitions[i].Leader {
				return fmt.Errorf("partition %d led by %d, preferred %v", p.Partition, p.Leader, p.Replicas)
			}
		}
		return nil
	})

	// 1.5.5: kill the controller; another broker is elected and
	// `ktool controller` names it.
	var ctrl controller.Info
	if _, err := k.json(&ctrl, controllerCmd); err != nil {
		t.Fatal(err)
	}
	if ctrl.ID < 0 || ctrl.ID > 2 || ctrl.Endpoint == "" {
		t.Fatalf("controller: %+v", ctrl)
	}
	old := ctrl.ID
	c.Kill(old)
	brokertest.Eventually(t, 20*time.Second, func() error {
		var now controller.Info
		if _, err := k.json(&now, controllerCmd); err != nil {
			return err
		}
		if now.ID == old || now.ID < 0 {
			return fmt.Errorf("controller is %d", now.ID)
		}
		if !slices.Contains(c.IDs(), now.ID) {
			return fmt.Errorf("controller %d is not a running broker", now.ID)
		}
		return nil
	})
	// Each broker answers from its own metadata cache, which the new
	// controller updates one broker after another: right after the
	// failover a broker may still name the dead controller.
	brokertest.Eventually(t, 20*time.Second, func() error {
		code, err := k.json(&h, healthCmd)
		if err != nil {
			return err
		}
		if code != cmdutil.ExitProblems || h.Controller == old || !slices.Equal(h.BrokersDown, []int32{old}) {
			return fmt.Errorf("health after the controller died: exit %d, %+v", code, h)
		}
		return nil
	})
}

// checkTable looks at the human form of `topic describe`: every partition's
// row shows the dead broker in the OSR column.
func checkTable(t *testing.T, k ktool, dead int32) {
	t.Helper()
	r := k.run(describeCmd, "test")
	if r.code != 0 {
		t.Fatalf("topic describe: exit %d: %s", r.code, r.errOut)
	}
	lines := strings.Split(strings.TrimRight(r.out, "\n"), "\n")
	if len(lines) < 5 || !strings.HasPrefix(lines[0], "Topic: test  Partitions: 3  Replication factor: 3") {
		t.Fatalf("table:\n%s", r.out)
	}
	header := strings.Fields(lines[1])
	osr := slices.Index(header, "OSR")
	isr := slices.Index(header, "ISR")
	if osr < 0 || isr < 0 {
		t.Fatalf("no ISR and OSR columns in %q", lines[1])
	}
	for _, line := range lines[2:5] {
		cols := strings.Fields(line)
		if len(cols) != len(header) {
			t.Errorf("row %q does not line up with %q", line, lines[1])
			continue
		}
		if cols[osr] != fmt.Sprint(dead) || strings.Contains(cols[isr], fmt.Sprint(dead)) {
			t.Errorf("row %q: ISR %s OSR %s, want broker %d in OSR only", line, cols[isr], cols[osr], dead)
		}
	}
}
