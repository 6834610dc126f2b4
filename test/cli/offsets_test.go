package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/broker/brokertest"
	"github.com/ktoolhq/ktool/tools/apiversions"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
	"github.com/ktoolhq/ktool/tools/logdirs"
	"github.com/ktoolhq/ktool/tools/offsets"
	"github.com/ktoolhq/ktool/tools/topic"
)

// run executes cmd with args and decodes its JSON output into out.
func run(t *testing.T, env *cmdtest.Env, cmd *cobra.Command, out any, args ...string) error {
	t.Helper()
	env.Out.Reset()
	env.ErrOut.Reset()
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs(args)
	cmd.SetOut(env.Out)
	cmd.SetErr(env.ErrOut)
	err := cmd.ExecuteContext(cmdtest.Ctx(t))
	if out != nil && env.Out.Len() > 0 {
		if jerr := json.Unmarshal(env.Out.Bytes(), out); jerr != nil {
			t.Fatalf("%v: %s", jerr, env.Out)
		}
	}
	return err
}

// An operator looks offsets up by time and trims records on a 3-broker
// cluster, and asks it for its API versions.
func TestOffsetsTrimAPIVersions(t *testing.T) {
	for _, store := range brokertest.Stores {
		t.Run(string(store), func(t *testing.T) {
			c := brokertest.NewCluster(t, 3, brokertest.WithStore(store))
			env := cmdtest.NewEnv(t, c.Addrs())
			env.F.ClientTimeout = 15 * time.Second
			if err := run(t, env, topic.NewCreateCommand(env.F, nil), nil, "logs", "--partitions", "2", "--replication-factor", "3"); err != nil {
				t.Fatal(err)
			}
			cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
			old := time.Now().Add(-3 * time.Hour).Truncate(time.Millisecond)
			for i := range 6 {
				ts := old.Add(time.Duration(i) * time.Hour / 2)
				if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "logs", Partition: 0, Value: []byte("x"), Timestamp: ts}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}

			var rows []offsets.Offset
			if err := run(t, env, offsets.NewCommand(env.F, nil), &rows, "logs", "-o", "json"); err != nil || len(rows) != 2 || rows[0].Offset != 6 {
				t.Fatalf("latest: %+v, %v", rows, err)
			}
			// Records at -3h, -2.5h, ... -0.5h: the first at or after -1h10m is the fifth.
			if err := run(t, env, offsets.NewCommand(env.F, nil), &rows, "logs:0", "--time", "-70m", "-o", "json"); err != nil ||
				len(rows) != 1 || rows[0].Offset != 4 || rows[0].Timestamp != old.Add(2*time.Hour).UnixMilli() {
				t.Fatalf("by time: %+v, %v", rows, err)
			}

			var trimmed []topic.Trimmed
			if err := run(t, env, topic.NewTrimCommand(env.F, nil), &trimmed, "logs:0", "--before", "-70m", "--yes", "-o", "json"); err != nil ||
				len(trimmed) != 1 || trimmed[0].LowWatermark != 4 {
				t.Fatalf("trim: %+v, %v", trimmed, err)
			}
			if err := run(t, env, offsets.NewCommand(env.F, nil), &rows, "logs", "--time", "earliest", "-o", "json"); err != nil ||
				len(rows) != 2 || rows[0].Offset != 4 || rows[1].Offset != 0 {
				t.Fatalf("earliest after the trim: %+v, %v", rows, err)
			}

			// Every broker holds a replica of logs-0 with the six records.
			brokertest.Eventually(t, 10*time.Second, func() error {
				var dirs []logdirs.Broker
				if err := run(t, env, logdirs.NewCommand(env.F), &dirs, "describe", "--topics", "logs", "-o", "json"); err != nil {
					return err
				}
				if len(dirs) != 3 {
					return errorf("log dirs of %d brokers", len(dirs))
				}
				for _, b := range dirs {
					if b.Replicas != 2 || b.Size == 0 || len(b.Dirs) != 1 || b.Dirs[0].Path != c.Dir(b.ID) {
						return errorf("broker %d: %+v (dir %s)", b.ID, b, c.Dir(b.ID))
					}
				}
				return nil
			})

			var brokers []apiversions.Broker
			if err := run(t, env, apiversions.NewCommand(env.F, nil), &brokers, "-o", "json"); err != nil || len(brokers) != 3 {
				t.Fatalf("api-versions: %+v, %v", brokers, err)
			}
			keys := map[int16]bool{}
			for _, a := range brokers[0].APIs {
				if a.Usable < 0 {
					t.Errorf("broker %d serves %s %d-%d, which ktool cannot use", brokers[0].ID, a.Name, a.Min, a.Max)
				}
				keys[a.Key] = true
			}
			for _, k := range []int16{0, 1, 2, 3, 21, 32, 35, 45, 46} {
				if !keys[k] {
					t.Errorf("api-versions lacks key %d: %+v", k, brokers[0].APIs)
				}
			}
		})
	}
}

// Errors a ktool broker returns are said once, and growing a topic to fewer
// partitions says why it cannot be.
func TestErrorsSaidOnce(t *testing.T) {
	c := brokertest.NewCluster(t, 1)
	env := cmdtest.NewEnv(t, c.Addrs())
	err := run(t, env, topic.NewCreateCommand(env.F, nil), nil, "bad name")
	if err == nil || strings.Count(err.Error(), "INVALID_TOPIC_EXCEPTION") != 1 || strings.Contains(err.Error(), "--brokers") {
		t.Errorf("invalid topic name: %v", err)
	}
	if err := run(t, env, topic.NewCreateCommand(env.F, nil), nil, "three", "--partitions", "3"); err != nil {
		t.Fatal(err)
	}
	err = run(t, env, topic.NewAddPartitionsCommand(env.F, nil), nil, "three", "--partitions", "2")
	if err == nil || !strings.Contains(err.Error(), `topic "three" has 3 partitions and partitions can never be removed`) {
		t.Errorf("shrinking: %v", err)
	}
}
