package topic

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
)

func runTrimArgs(t *testing.T, env *cmdtest.Env, args ...string) ([]Trimmed, error) {
	t.Helper()
	env.Out.Reset()
	cmd := NewTrimCommand(env.F, nil)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs(append(args, "-o", "json"))
	cmd.SetOut(env.Out)
	cmd.SetErr(env.ErrOut)
	err := cmd.ExecuteContext(cmdtest.Ctx(t))
	var rows []Trimmed
	if env.Out.Len() > 0 {
		if jerr := json.Unmarshal(env.Out.Bytes(), &rows); jerr != nil {
			t.Fatalf("%v: %s", jerr, env.Out)
		}
	}
	return rows, err
}

func startOffsets(t *testing.T, f *cmdutil.Factory, topic string) map[int32]int64 {
	t.Helper()
	adm, err := f.Admin()
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	l, err := adm.ListStartOffsets(cmdtest.Ctx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	l.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

func TestTrimAgainstKfake(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(1), kfake.SeedTopics(2, "tr"))
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	old := time.Now().Add(-2 * time.Hour)
	for i := range 10 {
		ts := old.Add(time.Duration(i) * time.Minute)
		if i >= 5 {
			ts = time.Now()
		}
		for p := int32(0); p < 2; p++ {
			if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "tr", Partition: p, Value: []byte("v"), Timestamp: ts}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}

	if _, err := runTrimArgs(t, env, "tr", "--offset", "3"); !errors.As(err, new(*cmdutil.ExitErr)) || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("trim without --yes off a terminal: %v", err)
	}
	rows, err := runTrimArgs(t, env, "tr", "--offset", "3", "--dry-run")
	if err != nil || len(rows) != 2 || startOffsets(t, env.F, "tr")[0] != 0 {
		t.Fatalf("dry run: %+v, %v, starts %v", rows, err, startOffsets(t, env.F, "tr"))
	}
	rows, err = runTrimArgs(t, env, "tr:0", "--offset", "3", "--yes")
	if err != nil || len(rows) != 1 || rows[0].LowWatermark != 3 {
		t.Fatalf("trim to 3: %+v, %v", rows, err)
	}
	rows, err = runTrimArgs(t, env, "tr", "--partitions", "1", "--before", "-1h", "--yes")
	if err != nil || len(rows) != 1 || rows[0].Partition != 1 || rows[0].LowWatermark != 5 {
		t.Fatalf("trim before an hour ago: %+v, %v", rows, err)
	}
	plan := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(plan, []byte(`{"version":1,"partitions":[{"topic":"tr","partition":0,"offset":-1}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err = runTrimArgs(t, env, "--from-file", plan, "--yes")
	if err != nil || len(rows) != 1 || rows[0].LowWatermark != 10 {
		t.Fatalf("trim from kafka-delete-records.sh's file: %+v, %v", rows, err)
	}
	if got := startOffsets(t, env.F, "tr"); got[0] != 10 || got[1] != 5 {
		t.Errorf("log start offsets %v, want 0:10 1:5", got)
	}
	rows, err = runTrimArgs(t, env, "tr:1", "--offset", "99", "--yes")
	if err == nil || len(rows) != 1 || !strings.Contains(rows[0].Error, "OFFSET_OUT_OF_RANGE") {
		t.Errorf("trim past the end: %+v, %v", rows, err)
	}
	for _, args := range [][]string{
		{"tr"},
		{"tr", "--offset", "1", "--before", "-1h"},
		{"--offset", "1"},
		{"tr", "--from-file", plan},
		{"tr", "--offset", "-5"},
	} {
		var ee *cmdutil.ExitErr
		if _, err := runTrimArgs(t, env, append(args, "--yes")...); !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage {
			t.Errorf("trim %v: %v, want a usage error", args, err)
		}
	}
}

func TestReadDeleteRecordsPlan(t *testing.T) {
	for _, bad := range []string{
		`{"version":2,"partitions":[{"topic":"a","partition":0,"offset":1}]}`,
		`{"version":1,"partitions":[]}`,
		`{"version":1,"partitions":[{"topic":"a","partition":0,"offset":1},{"topic":"a","partition":0,"offset":2}]}`,
		`{"version":1,"partitions":[{"topic":"a","partition":-1,"offset":1}]}`,
		`{"version":1,"partitions":[{"topic":"a","partition":0,"offset":-2}]}`,
		`{"version":1,"partitions":[{"topic":"a","partition":0,"offset":1,"extra":true}]}`,
	} {
		if _, err := ReadDeleteRecordsPlan(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}
