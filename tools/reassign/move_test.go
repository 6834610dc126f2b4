package reassign

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
)

func TestParseRate(t *testing.T) {
	for in, want := range map[string]int64{"1048576": 1 << 20, "10M": 10 << 20, "10MB/s": 10 << 20, "512KiB": 512 << 10, "2g": 2 << 30} {
		if got, err := ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-5", "fast", "10T", "99999999999G"} {
		if _, err := ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q) succeeded", in)
		}
	}
}

func TestMoveAgainstKfake(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(4), kfake.SeedTopics(6, "k"))
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	runMove := func(out any, args ...string) error {
		t.Helper()
		env.Out.Reset()
		cmd := NewCommand(env.F)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		cmd.SetArgs(append([]string{"move"}, args...))
		cmd.SetOut(env.Out)
		cmd.SetErr(env.ErrOut)
		err := cmd.ExecuteContext(cmdtest.Ctx(t))
		if out != nil && err == nil {
			if jerr := json.Unmarshal(env.Out.Bytes(), out); jerr != nil {
				t.Fatalf("%v: %s", jerr, env.Out)
			}
		}
		return err
	}
	plan := filepath.Join(t.TempDir(), "plan.json")
	var g Generated
	if err := runMove(&g, "--generate", "--topics", "k", "--broker-list", "1,2,3", "--output-file", plan, "-o", "json"); err != nil {
		t.Fatal(err)
	}
	for _, pp := range g.Proposed.Partitions {
		for _, r := range pp.Replicas {
			if r == 0 {
				t.Errorf("plan keeps a replica on broker 0: %+v", pp)
			}
		}
	}
	// kfake accepts reassignments but never carries them out (its replicas
	// stay where they are), so the plan reads as not reassigned, and a cancel
	// finds nothing running; ktool's brokers do the whole move (test/cli).
	if err := runMove(nil, "--execute", "--plan", plan, "--throttle", "10M"); err != nil {
		t.Fatal(err)
	}
	if err := runMove(nil, "--verify", "--plan", plan); err == nil || !strings.Contains(err.Error(), "are not reassigned and none runs for them") ||
		!strings.Contains(env.Out.String(), "differs from the plan") {
		t.Errorf("verify on kfake: %v\n%s", err, env.Out)
	}
	if err := runMove(nil, "--cancel", "--plan", plan); err != nil || !strings.Contains(env.Out.String(), "had none running") {
		t.Errorf("cancel on kfake: %v\n%s", err, env.Out)
	}
	if err := runMove(nil, "--execute"); err == nil {
		t.Error("--execute without --plan succeeded")
	}
	if err := runMove(nil, "--generate", "--topics", "k", "--broker-list", "7"); err == nil {
		t.Error("a plan onto a broker that does not exist")
	}
}

// TestDecommissionAndBalanceAgainstKfake: `broker decommission --dry-run`
// and `cluster balance --dry-run` read a cluster that is not ktool's and
// plan without moving anything: the decommission plan holds no replica on
// the broker and moves only its replicas; the balance plan evens replicas
// over every broker.
func TestDecommissionAndBalanceAgainstKfake(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(4), kfake.SeedTopics(12, "d"))
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	run := func(out any, cmd *cobra.Command, args ...string) error {
		t.Helper()
		env.Out.Reset()
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		cmd.SetArgs(args)
		cmd.SetOut(env.Out)
		cmd.SetErr(env.ErrOut)
		err := cmd.ExecuteContext(cmdtest.Ctx(t))
		if out != nil && err == nil {
			if jerr := json.Unmarshal(env.Out.Bytes(), out); jerr != nil {
				t.Fatalf("%v: %s", jerr, env.Out)
			}
		}
		return err
	}
	var g Generated
	if err := run(&g, NewDecommissionCommand(env.F, nil), "2", "--dry-run", "-o", "json"); err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, pp := range g.Current.Partitions {
		for _, r := range pp.Replicas {
			if r == 2 {
				held++
			}
		}
	}
	if held == 0 {
		t.Fatalf("kfake's broker 2 holds no replica of d: %+v", g.Current)
	}
	for _, pp := range g.Proposed.Partitions {
		if slices.Contains(pp.Replicas, 2) {
			t.Errorf("the decommission plan keeps a replica on broker 2: %+v", pp)
		}
	}
	if g.Moves != held {
		t.Errorf("the plan moves %d replicas, broker 2 holds %d", g.Moves, held)
	}
	for _, l := range g.Loads {
		if l.Broker == 2 {
			t.Errorf("broker 2 in the loads after decommission: %+v", l)
		}
	}
	if err := run(nil, NewDecommissionCommand(env.F, nil), "9"); err != nil || !strings.Contains(env.Out.String(), "Broker 9 is not registered (brokers: 0, 1, 2, 3) and holds no replicas") {
		t.Errorf("decommission of an unknown broker: %v\n%s", err, env.Out)
	}

	var b Balanced
	if err := run(&b, NewBalanceCommand(env.F, nil), "--dry-run", "-o", "json"); err != nil {
		t.Fatal(err)
	}
	if len(b.Before) != 4 || len(b.After) != 4 {
		t.Fatalf("balance: loads before %+v after %+v, want 4 brokers each", b.Before, b.After)
	}
	lo, hi := b.After[0].Replicas, b.After[0].Replicas
	for _, l := range b.After {
		lo, hi = min(lo, l.Replicas), max(hi, l.Replicas)
	}
	if hi-lo > 1 {
		t.Errorf("balance leaves replicas %d to %d per broker: %+v", lo, hi, b.After)
	}
	if err := run(nil, NewBalanceCommand(env.F, nil), "--dry-run"); err != nil || !strings.Contains(env.Out.String(), "Replicas and preferred leaders per broker now:") {
		t.Errorf("balance table: %v\n%s", err, env.Out)
	}
}
