package profile

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
)

func isUsage(err error) bool {
	var ee *cmdutil.ExitErr
	return errors.As(err, &ee) && ee.Code == cmdutil.ExitUsage
}

func TestProfileLifecycle(t *testing.T) {
	t.Setenv("KTOOL_BROKERS", "")
	t.Setenv("KTOOL_PROFILE", "")
	env := cmdtest.NewEnv(t, nil)
	f := env.F

	if err := runCreate(&CreateOptions{Factory: f, Name: "local", Brokers: []string{"localhost:9092"}, Zookeeper: "localhost:2181"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(env.Out.String(), "it is the current profile") {
		t.Errorf("first profile not made current: %q", env.Out)
	}
	if err := runCreate(&CreateOptions{Factory: f, Name: "prod", Brokers: []string{"k1:9092", "k2:9092"}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.Brokers(); strings.Join(got, ",") != "localhost:9092" {
		t.Errorf("brokers from the current profile: %v", got)
	}
	if zk, err := f.Zookeeper(""); err != nil || zk != "localhost:2181" {
		t.Errorf("zookeeper from the profile: %q, %v", zk, err)
	}
	if err := runCreate(&CreateOptions{Factory: f, Name: "prod", Brokers: []string{"x:1"}}); !isUsage(err) {
		t.Errorf("duplicate create: %v", err)
	}
	if err := runUse(&UseOptions{Factory: f, Name: "prod"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.Brokers(); strings.Join(got, ",") != "k1:9092,k2:9092" {
		t.Errorf("brokers after use: %v", got)
	}
	if err := runUse(&UseOptions{Factory: f, Name: "nope"}); !isUsage(err) || !strings.Contains(err.Error(), "local, prod") {
		t.Errorf("use of a missing profile: %v", err)
	}

	env.Out.Reset()
	lo := &ListOptions{Factory: f}
	lo.Output.Format = "json"
	if err := runList(lo); err != nil {
		t.Fatal(err)
	}
	var rows []Entry
	if err := json.Unmarshal(env.Out.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Name != "local" || rows[0].Current || !rows[1].Current || len(rows[1].Brokers) != 2 {
		t.Errorf("list %+v", rows)
	}

	env.Out.Reset()
	if err := runDelete(&DeleteOptions{Factory: f, Name: "prod"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(env.Out.String(), "No profile is current") {
		t.Errorf("delete of the current profile: %q", env.Out)
	}
	if got, _ := f.Brokers(); strings.Join(got, ",") != "localhost:9092" {
		t.Errorf("with no current profile brokers should default: %v", got)
	}
	if err := runDelete(&DeleteOptions{Factory: f, Name: "prod"}); !isUsage(err) {
		t.Errorf("second delete: %v", err)
	}
}

func TestCreateNeedsBrokersAndName(t *testing.T) {
	env := cmdtest.NewEnv(t, nil)
	if err := runCreate(&CreateOptions{Factory: env.F, Name: "x"}); !isUsage(err) {
		t.Errorf("no brokers: %v", err)
	}
	if err := runCreate(&CreateOptions{Factory: env.F, Name: "a b", Brokers: []string{"h:1"}}); !isUsage(err) {
		t.Errorf("bad name: %v", err)
	}
}

func TestCreateTakesRootBrokersFlag(t *testing.T) {
	env := cmdtest.NewEnv(t, nil)
	var got *CreateOptions
	root := &cobra.Command{Use: "ktool"}
	env.F.AddGlobalFlags(root)
	root.AddCommand(NewCreateCommand(env.F, func(_ context.Context, o *CreateOptions) error { got = o; return nil }))
	root.SetArgs([]string{"create", "x", "--brokers", "h1:9092,h2:9092", "--zookeeper", "z:2181/kafka", "--use"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Name != "x" || strings.Join(got.Brokers, ",") != "h1:9092,h2:9092" || got.Zookeeper != "z:2181/kafka" || !got.Use {
		t.Errorf("parsed %+v", got)
	}
}
