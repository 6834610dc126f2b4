package logdirs

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
)

func TestDescribeAgainstKfake(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(2), kfake.SeedTopics(2, "d", "e"))
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("d"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for range 10 {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("some bytes")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	o := &DescribeOptions{Factory: env.F, Topics: []string{"d"}}
	o.Output.Format = "json"
	if err := RunDescribe(cmdtest.Ctx(t), o); err != nil {
		t.Fatal(err)
	}
	var rows []Broker
	if err := json.Unmarshal(env.Out.Bytes(), &rows); err != nil {
		t.Fatalf("%v: %s", err, env.Out)
	}
	var size int64
	for _, b := range rows {
		var sum int64
		for _, d := range b.Dirs {
			for _, r := range d.Replicas {
				if r.Topic != "d" {
					t.Errorf("--topics d lists %s", r.Topic)
				}
				sum += r.Size
			}
		}
		if sum != b.Size {
			t.Errorf("broker %d total %d, replicas add up to %d", b.ID, b.Size, sum)
		}
		size += sum
	}
	if len(rows) != 2 || size == 0 {
		t.Errorf("log dirs: %+v", rows)
	}
	env.Out.Reset()
	if err := RunDescribe(cmdtest.Ctx(t), &DescribeOptions{Factory: env.F, Brokers: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	if out := env.Out.String(); !strings.Contains(out, "Totals per broker:") || strings.Contains(out, "\n 0 ") {
		t.Errorf("table for broker 1:\n%s", out)
	}
}
