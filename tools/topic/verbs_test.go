package topic

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
)

func TestParseAssignment(t *testing.T) {
	got, err := ParseAssignment("1:2, 2:3 ,3:1")
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]int32{{1, 2}, {2, 3}, {3, 1}}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, bad := range []string{"", "1:2,,2:3", "1:x", "1:1", "1:2,3", "-1:2"} {
		if _, err := ParseAssignment(bad); err == nil {
			t.Errorf("ParseAssignment(%q) accepted", bad)
		}
	}
}

func TestCreateWithAssignmentAndConfig(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(3))
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	ctx := cmdtest.Ctx(t)
	opts := &CreateOptions{Factory: env.F, Topic: "t1", Partitions: -1, ReplicationFactor: -1,
		ReplicaAssignment: "0:1,1:2", Configs: []string{"retention.ms=1000"}}
	if err := runCreate(ctx, opts); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(env.Out.String(), "Created topic t1 with 2 partitions and replication factor 2.") {
		t.Errorf("output %q", env.Out.String())
	}
	topics, err := loadWith(t, env.F, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if topics[0].PartitionCount != 2 || len(topics[0].Overrides) != 1 || topics[0].Overrides[0].Value != "1000" {
		t.Errorf("created %+v", topics[0])
	}
	if err := runCreate(ctx, opts); err == nil || !strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS") {
		t.Errorf("second create: err = %v, want TOPIC_ALREADY_EXISTS", err)
	}
	opts.IfNotExists = true
	if err := runCreate(ctx, opts); err != nil {
		t.Errorf("--if-not-exists: %v", err)
	}
}

func TestCreateValidateOnly(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(1))
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	opts := &CreateOptions{Factory: env.F, Topic: "v", Partitions: 4, ReplicationFactor: 1, ValidateOnly: true}
	if err := runCreate(cmdtest.Ctx(t), opts); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(env.Out.String(), "Validated (not created) topic v") {
		t.Errorf("output %q", env.Out.String())
	}
	if _, err := loadWith(t, env.F, "v"); err == nil {
		t.Error("--validate-only created the topic")
	}
}

func TestCreateUsageErrors(t *testing.T) {
	ios, _, _, _ := cmdutil.Test()
	f := cmdutil.NewFactory(ios, cmdutil.BuildInfo{})
	for _, o := range []*CreateOptions{
		{Factory: f, Topic: "x", Partitions: 3, ReplicationFactor: -1, ReplicaAssignment: "1:2"},
		{Factory: f, Topic: "x", Partitions: -1, ReplicationFactor: -1, ReplicaAssignment: "1:2,3"},
		{Factory: f, Topic: "x", Partitions: -1, ReplicationFactor: -1, Configs: []string{"novalue"}},
	} {
		var ee *cmdutil.ExitErr
		if err := runCreate(cmdtest.Ctx(t), o); !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage {
			t.Errorf("%+v: err = %v, want usage error", o, err)
		}
	}
}

func TestCreateFlags(t *testing.T) {
	ios, _, _, _ := cmdutil.Test()
	f := cmdutil.NewFactory(ios, cmdutil.BuildInfo{})
	var got *CreateOptions
	cmd := NewCreateCommand(f, func(_ context.Context, o *CreateOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"orders", "-p", "6", "-r", "3", "--config", "a=b", "-c", "c=d", "--if-not-exists", "--validate-only"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Topic != "orders" || got.Partitions != 6 || got.ReplicationFactor != 3 ||
		strings.Join(got.Configs, " ") != "a=b c=d" || !got.IfNotExists || !got.ValidateOnly {
		t.Errorf("parsed %+v", got)
	}
}

func TestListDeleteAddPartitionsAlterConfig(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(2), kfake.SeedTopics(2, "a", "b"))
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	ctx := cmdtest.Ctx(t)

	lo := &ListOptions{Factory: env.F}
	lo.Output.Format = "json"
	if err := runList(ctx, lo); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"name": "a"`, `"name": "b"`, `"partitions": 2`, `"replication_factor": 2`} {
		if !strings.Contains(env.Out.String(), want) {
			t.Errorf("list output lacks %s:\n%s", want, env.Out)
		}
	}

	env.Out.Reset()
	if err := runAddPartitions(ctx, &AddPartitionsOptions{Factory: env.F, Topics: []string{"a"}, Total: 5}); err != nil {
		t.Fatal(err)
	}
	if err := runAddPartitions(ctx, &AddPartitionsOptions{Factory: env.F, Topics: []string{"b"}, Add: 1}); err != nil {
		t.Fatal(err)
	}
	err := runAddPartitions(ctx, &AddPartitionsOptions{Factory: env.F, Topics: []string{"a"}, Total: 1})
	if want := `topic "a" has 5 partitions and partitions can never be removed: --partitions must be more than 5`; err == nil || err.Error() != want {
		t.Errorf("shrinking partitions: %v, want %q", err, want)
	}
	err = runAddPartitions(ctx, &AddPartitionsOptions{Factory: env.F, Topics: []string{"a"}, Total: 5})
	if want := `topic "a" already has 5 partitions`; err == nil || err.Error() != want {
		t.Errorf("same count: %v, want %q", err, want)
	}

	if err := runAlterConfig(ctx, &AlterConfigOptions{Factory: env.F, Topics: []string{"a"}, Set: []string{"retention.ms=5"}}); err != nil {
		t.Fatal(err)
	}
	topics, err := loadWith(t, env.F, "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	if topics[0].PartitionCount != 5 || topics[1].PartitionCount != 3 {
		t.Errorf("partition counts %d, %d; want 5, 3", topics[0].PartitionCount, topics[1].PartitionCount)
	}
	if len(topics[0].Overrides) != 1 || topics[0].Overrides[0] != (Config{Name: "retention.ms", Value: "5"}) {
		t.Errorf("overrides after --set: %+v", topics[0].Overrides)
	}
	if err := runAlterConfig(ctx, &AlterConfigOptions{Factory: env.F, Topics: []string{"a"}, Delete: []string{"retention.ms"}}); err != nil {
		t.Fatal(err)
	}
	if topics, _ = loadWith(t, env.F, "a"); len(topics[0].Overrides) != 0 {
		t.Errorf("overrides after --delete: %+v", topics[0].Overrides)
	}

	if err := runDelete(ctx, &DeleteOptions{Factory: env.F, Topics: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	if err := runDelete(ctx, &DeleteOptions{Factory: env.F, Topics: []string{"a"}}); err == nil {
		t.Error("deleting a missing topic succeeded")
	}
	if err := runDelete(ctx, &DeleteOptions{Factory: env.F, Topics: []string{"a"}, IfExists: true}); err != nil {
		t.Errorf("--if-exists: %v", err)
	}
	if !strings.Contains(env.Out.String(), "Deleted topic a.") {
		t.Errorf("output %q", env.Out.String())
	}
}

func TestUnreachableClusterNamesBrokers(t *testing.T) {
	env := cmdtest.NewEnv(t, []string{"127.0.0.1:1"})
	env.F.ClientTimeout = 300 * time.Millisecond
	err := runList(cmdtest.Ctx(t), &ListOptions{Factory: env.F})
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") || !strings.Contains(err.Error(), "--brokers") {
		t.Fatalf("err = %v, want it to name the broker and the flag", err)
	}
}
