package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/broker/brokertest"
	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
	"github.com/ktoolhq/ktool/tools/logdirs"
	"github.com/ktoolhq/ktool/tools/reassign"
	"github.com/ktoolhq/ktool/tools/topic"
)

// An operator moves a broker's replicas to its second log dir with
// `ktool log-dirs move --wait`, back with a kafka-reassign-partitions.sh plan
// carrying log_dirs, and gets exit code 2 for usage errors and 1 for a dir
// the broker does not have.
func TestLogDirsMove(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	c := brokertest.NewCluster(t, 1, brokertest.WithBrokerProps(func(int32) map[string]string {
		return map[string]string{"log.dirs": first + "," + second}
	}))
	env := cmdtest.NewEnv(t, c.Addrs())
	if err := run(t, env, topic.NewCreateCommand(env.F, nil), nil, "disks", "--partitions", "2", "--replication-factor", "1"); err != nil {
		t.Fatal(err)
	}
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	for i := range 100 {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "disks", Partition: int32(i % 2), Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	in := func(dir string) map[int32]bool {
		t.Helper()
		var bs []logdirs.Broker
		if err := run(t, env, logdirs.NewDescribeCommand(env.F, nil), &bs, "--topics", "disks", "-o", "json"); err != nil {
			t.Fatal(err)
		}
		out := map[int32]bool{}
		for _, b := range bs {
			for _, d := range b.Dirs {
				for _, r := range d.Replicas {
					if d.Path == dir && !r.IsFuture {
						out[r.Partition] = true
					}
				}
			}
		}
		return out
	}
	var moves []logdirs.Move
	if err := run(t, env, logdirs.NewMoveCommand(env.F, nil), &moves, "--broker", "0", "--topic", "disks", "--to", second,
		"--wait", "--timeout", "60s", "--interval", "50ms", "-o", "json"); err != nil {
		t.Fatalf("move: %v: %s", err, env.ErrOut)
	}
	if len(moves) != 2 || moves[0].State != "done" || moves[1].State != "done" {
		t.Fatalf("moves: %+v", moves)
	}
	if got := in(second); !got[0] || !got[1] {
		t.Fatalf("partitions in %s after the move: %v", second, got)
	}

	plan := filepath.Join(t.TempDir(), "plan.json")
	body := fmt.Sprintf(`{"version":1,"partitions":[{"topic":"disks","partition":0,"replicas":[0],"log_dirs":[%q]},
		{"topic":"disks","partition":1,"replicas":[0],"log_dirs":["any"]}]}`, first)
	if err := os.WriteFile(plan, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(t, env, logdirs.NewMoveCommand(env.F, nil), &moves, "--plan", plan, "--wait", "--interval", "50ms", "-o", "json"); err != nil {
		t.Fatalf("move --plan: %v", err)
	}
	if len(moves) != 1 || moves[0].Partition != 0 || moves[0].State != "done" {
		t.Fatalf("moves of the plan: %+v", moves)
	}
	if got := in(first); !got[0] || got[1] {
		t.Fatalf("partitions in %s after the plan: %v, want only 0", first, got)
	}

	// partition move --execute with log_dirs moves the replica as
	// kafka-reassign-partitions.sh does.
	plan2 := filepath.Join(t.TempDir(), "plan2.json")
	body = fmt.Sprintf(`{"version":1,"partitions":[{"topic":"disks","partition":1,"replicas":[0],"log_dirs":[%q]}]}`, first)
	if err := os.WriteFile(plan2, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(t, env, reassign.NewMoveCommand(env.F, nil), nil, "--execute", "--plan", plan2); err != nil {
		t.Fatalf("partition move --execute with log_dirs: %v: %s", err, env.ErrOut)
	}
	brokertest.Eventually(t, 30*time.Second, func() error {
		if got := in(first); !got[0] || !got[1] {
			return errorf("partitions in %s: %v", first, got)
		}
		return nil
	})

	usage := [][]string{
		{"--broker", "0", "--topic", "disks"},
		{"--broker", "0", "--topic", "disks", "--to", "relative/dir"},
		{"--plan", plan, "--topic", "disks"},
		{"--plan", filepath.Join(t.TempDir(), "missing.json")},
	}
	for _, args := range usage {
		err := run(t, env, logdirs.NewMoveCommand(env.F, nil), nil, args...)
		if code := cmdutil.ExitCode(io.Discard, err); code != cmdutil.ExitUsage {
			t.Errorf("move %v: exit %d (%v), want %d", args, code, err, cmdutil.ExitUsage)
		}
	}
	err := run(t, env, logdirs.NewMoveCommand(env.F, nil), &moves, "--broker", "0", "--topic", "disks", "--partitions", "1", "--to", "/no/such/dir", "-o", "json")
	if code := cmdutil.ExitCode(io.Discard, err); code != cmdutil.ExitError {
		t.Fatalf("move to an unknown dir: exit %d (%v), want %d", code, err, cmdutil.ExitError)
	}
	if len(moves) != 1 || moves[0].State != "error" {
		t.Fatalf("move to an unknown dir: %+v", moves)
	}
}
