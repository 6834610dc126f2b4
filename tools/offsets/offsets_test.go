package offsets

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
)

func TestParseTime(t *testing.T) {
	now := time.Date(2026, 1, 31, 10, 0, 0, 0, time.UTC)
	for in, want := range map[string]int64{
		"latest": Latest, "-1": Latest, "earliest": Earliest, "-2": Earliest, "max-timestamp": MaxTimestamp,
		"1700000000000":        1700000000000,
		"2026-01-31T09:30:00Z": now.Add(-30 * time.Minute).UnixMilli(),
		"-30m":                 now.Add(-30 * time.Minute).UnixMilli(),
		"1h ago":               now.Add(-time.Hour).UnixMilli(),
		"-PT2H":                now.Add(-2 * time.Hour).UnixMilli(),
	} {
		got, err := ParseTime(in, now)
		if err != nil || got != want {
			t.Errorf("ParseTime(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-4", "yesterday", "-0s", "2026-13-01"} {
		if _, err := ParseTime(in, now); err == nil {
			t.Errorf("ParseTime(%q) succeeded", in)
		}
	}
}

func TestParseTargets(t *testing.T) {
	tg, err := ParseTarget("orders:0,2-4,2")
	if err != nil || tg.Topic != "orders" || len(tg.Partitions) != 4 || tg.Partitions[3] != 4 {
		t.Errorf("ParseTarget: %+v, %v", tg, err)
	}
	for _, in := range []string{":1", "t:", "t:a", "t:3-1", "t:0-99999999"} {
		if _, err := ParseTarget(in); err == nil {
			t.Errorf("ParseTarget(%q) succeeded", in)
		}
	}
}

// produceAt writes one record per timestamp to partition p.
func produceAt(t *testing.T, addrs []string, topic string, p int32, ts ...time.Time) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, at := range ts {
		r := &kgo.Record{Topic: topic, Partition: p, Value: []byte("v"), Timestamp: at}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

func run(t *testing.T, env *cmdtest.Env, args ...string) ([]Offset, error) {
	t.Helper()
	env.Out.Reset()
	cmd := NewCommand(env.F, nil)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs(append(args, "-o", "json"))
	cmd.SetOut(env.Out)
	cmd.SetErr(env.ErrOut)
	err := cmd.ExecuteContext(cmdtest.Ctx(t))
	var rows []Offset
	if env.Out.Len() > 0 {
		if jerr := json.Unmarshal(env.Out.Bytes(), &rows); jerr != nil {
			t.Fatalf("%v: %s", jerr, env.Out)
		}
	}
	return rows, err
}

func TestOffsetsAgainstKfake(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(1), kfake.SeedTopics(2, "o"))
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	produceAt(t, c.ListenAddrs(), "o", 0, base, base.Add(time.Minute), base.Add(2*time.Minute))

	rows, err := run(t, env, "o")
	if err != nil || len(rows) != 2 || rows[0].Offset != 3 || rows[1].Offset != 0 {
		t.Fatalf("latest: %+v, %v", rows, err)
	}
	rows, err = run(t, env, "o:0", "--time", "earliest")
	if err != nil || len(rows) != 1 || rows[0].Offset != 0 || rows[0].Timestamp != -1 {
		t.Fatalf("earliest: %+v, %v", rows, err)
	}
	at := base.Add(30 * time.Second).UnixMilli()
	rows, err = run(t, env, "o", "--partitions", "0", "--time", time.UnixMilli(at).UTC().Format(time.RFC3339Nano))
	if err != nil || len(rows) != 1 || rows[0].Offset != 1 || rows[0].Timestamp != base.Add(time.Minute).UnixMilli() {
		t.Fatalf("by time: %+v, %v", rows, err)
	}
	rows, err = run(t, env, "o:0", "--time", "-1s")
	if err != nil || len(rows) != 1 || rows[0].Offset != 3 {
		t.Fatalf("after every record, the end offset: %+v, %v", rows, err)
	}
	rows, err = run(t, env, "o:7", "nosuch")
	if err == nil || !strings.Contains(err.Error(), "2 of 2 partitions have no offset") || len(rows) != 2 {
		t.Fatalf("unknown partition and topic: %+v, %v", rows, err)
	}
	if _, err := run(t, env, "--partitions", "0"); !isUsage(err) {
		t.Errorf("--partitions without topics: %v", err)
	}
	if _, err := run(t, env, "o", "--time", "soon"); !isUsage(err) {
		t.Errorf("bad --time: %v", err)
	}
}

func isUsage(err error) bool {
	ee, ok := err.(*cmdutil.ExitErr)
	return ok && ee.Code == cmdutil.ExitUsage
}
