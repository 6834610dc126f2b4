package configs

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
)

func exec(t *testing.T, env *cmdtest.Env, args ...string) error {
	t.Helper()
	env.Out.Reset()
	cmd := NewCommand(env.F)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs(args)
	cmd.SetOut(env.Out)
	cmd.SetErr(env.ErrOut)
	return cmd.ExecuteContext(cmdtest.Ctx(t))
}

func describe(t *testing.T, env *cmdtest.Env, args ...string) Described {
	t.Helper()
	if err := exec(t, env, append([]string{"describe"}, append(args, "-o", "json")...)...); err != nil {
		t.Fatalf("describe %v: %v", args, err)
	}
	var d Described
	if err := json.Unmarshal(env.Out.Bytes(), &d); err != nil {
		t.Fatalf("%v: %s", err, env.Out)
	}
	return d
}

func value(d Described, name string) (Entry, bool) {
	for _, c := range d.Configs {
		if c.Name == name {
			return c, true
		}
	}
	return Entry{}, false
}

func TestConfigsAgainstKfake(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(2), kfake.SeedTopics(1, "cfg"))
	env := cmdtest.NewEnv(t, c.ListenAddrs())

	if d := describe(t, env, "topic", "cfg"); len(d.Configs) != 0 {
		t.Errorf("a new topic has overrides: %+v", d.Configs)
	}
	if err := exec(t, env, "alter", "topic", "cfg", "--set", "retention.ms=1000", "--set", "cleanup.policy=compact"); err != nil {
		t.Fatal(err)
	}
	d := describe(t, env, "topic", "cfg")
	if e, ok := value(d, "retention.ms"); !ok || e.Value != "1000" || e.Source != "DYNAMIC_TOPIC_CONFIG" || len(d.Configs) != 2 {
		t.Errorf("overrides after alter: %+v", d.Configs)
	}
	if err := exec(t, env, "alter", "topic", "cfg", "--delete", "cleanup.policy"); err != nil {
		t.Fatal(err)
	}
	if d := describe(t, env, "topic", "cfg"); len(d.Configs) != 1 {
		t.Errorf("overrides after delete: %+v", d.Configs)
	}

	if err := exec(t, env, "alter", "broker", "1", "--set", "log.retention.ms=5000"); err != nil {
		t.Fatal(err)
	}
	if d := describe(t, env, "broker", "1"); len(d.Configs) == 0 || d.Configs[0].Name != "log.retention.ms" || d.Configs[0].Value != "5000" {
		t.Errorf("broker 1 dynamic configs: %+v", d.Configs)
	}

	for _, e := range [][]string{{"user", "alice"}, {"client", "app"}, {"user", "--default"}} {
		if err := exec(t, env, append(append([]string{"alter"}, e...), "--set", "producer_byte_rate=1024")...); err != nil {
			t.Fatalf("alter %v: %v", e, err)
		}
		d := describe(t, env, e...)
		if v, ok := value(d, "producer_byte_rate"); !ok || v.Value != "1024" || v.Source != "QUOTA" {
			t.Errorf("quotas of %v: %+v", e, d.Configs)
		}
	}
	if err := exec(t, env, "alter", "user", "alice", "--delete", "producer_byte_rate"); err != nil {
		t.Fatal(err)
	}
	if d := describe(t, env, "user", "alice"); len(d.Configs) != 0 {
		t.Errorf("quotas of alice after delete: %+v", d.Configs)
	}
	if err := exec(t, env, "describe", "client", "app"); err != nil || !strings.Contains(env.Out.String(), "Quotas of client app:") {
		t.Errorf("table: %v\n%s", err, env.Out)
	}

	for _, args := range [][]string{
		{"describe"}, {"describe", "group", "g"}, {"describe", "topic"}, {"describe", "topic", "--default"},
		{"describe", "broker", "x"}, {"describe", "broker", "1", "--default"}, {"alter", "topic", "cfg"},
		{"alter", "topic", "cfg", "--set", "a=1", "--delete", "a"}, {"alter", "user", "u", "--set", "producer_byte_rate=fast"},
		{"alter", "user", "u", "--append", "producer_byte_rate=1"},
	} {
		var ee *cmdutil.ExitErr
		if err := exec(t, env, args...); !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}
