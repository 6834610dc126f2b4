package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/ktoolhq/ktool/broker/brokertest"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
	"github.com/ktoolhq/ktool/tools/configs"
	"github.com/ktoolhq/ktool/tools/topic"
)

func entry(d configs.Described, name string) (configs.Entry, bool) {
	for _, c := range d.Configs {
		if c.Name == name {
			return c, true
		}
	}
	return configs.Entry{}, false
}

// Configs changed live on a 3-broker cluster: a topic's override, a broker's
// dynamic config and the cluster-wide default, which topics without an
// override follow at once, with Kafka's sources and synonyms under --all.
func TestConfigsLive(t *testing.T) {
	c := brokertest.NewCluster(t, 3, brokertest.WithStore(brokertest.ZooKeeper))
	env := cmdtest.NewEnv(t, c.Addrs())
	if err := run(t, env, topic.NewCreateCommand(env.F, nil), nil, "live", "--replication-factor", "3"); err != nil {
		t.Fatal(err)
	}
	describe := func(args ...string) configs.Described {
		t.Helper()
		var d configs.Described
		if err := run(t, env, configs.NewCommand(env.F), &d, append([]string{"describe"}, append(args, "-o", "json")...)...); err != nil {
			t.Fatalf("describe %v: %v", args, err)
		}
		return d
	}
	alter := func(args ...string) {
		t.Helper()
		if err := run(t, env, configs.NewCommand(env.F), nil, append([]string{"alter"}, args...)...); err != nil {
			t.Fatalf("alter %v: %v", args, err)
		}
	}

	alter("broker", "--default", "--set", "log.retention.bytes=123456789")
	alter("broker", "1", "--set", "log.retention.bytes=987654321")
	// Any broker answers for the default; each learns the dynamic configs from
	// ZooKeeper's change notifications a moment after the write.
	brokertest.Eventually(t, 10*time.Second, func() error {
		if d := describe("broker", "--default"); len(d.Configs) != 1 || d.Configs[0].Source != "DYNAMIC_DEFAULT_BROKER_CONFIG" {
			return errorf("cluster default: %+v", d.Configs)
		}
		return nil
	})
	// Every broker learns the dynamic configs from ZooKeeper's change
	// notifications; broker 1's own value wins over the default.
	brokertest.Eventually(t, 10*time.Second, func() error {
		d := describe("broker", "1", "--all")
		e, _ := entry(d, "log.retention.bytes")
		var srcs []string
		for _, s := range e.Synonyms {
			srcs = append(srcs, s.Source+"="+s.Value)
		}
		want := "DYNAMIC_BROKER_CONFIG=987654321 DYNAMIC_DEFAULT_BROKER_CONFIG=123456789 DEFAULT_CONFIG=-1"
		if e.Value != "987654321" || strings.Join(srcs, " ") != want {
			return errorf("broker 1 log.retention.bytes = %+v, synonyms %s, want %s", e, srcs, want)
		}
		return nil
	})
	// The topic follows the default of the broker answering (the leader of
	// its partition may be any of the three).
	brokertest.Eventually(t, 10*time.Second, func() error {
		e, _ := entry(describe("topic", "live", "--all"), "retention.bytes")
		if e.Value != "123456789" && e.Value != "987654321" || !strings.HasPrefix(e.Source, "DYNAMIC_") {
			return errorf("topic retention.bytes = %+v", e)
		}
		return nil
	})
	alter("topic", "live", "--set", "retention.bytes=1000")
	brokertest.Eventually(t, 10*time.Second, func() error {
		e, _ := entry(describe("topic", "live"), "retention.bytes")
		if e.Value != "1000" || e.Source != "DYNAMIC_TOPIC_CONFIG" {
			return errorf("override: %+v", e)
		}
		return nil
	})
	alter("broker", "1", "--delete", "log.retention.bytes")
	brokertest.Eventually(t, 10*time.Second, func() error {
		if d := describe("broker", "1"); len(d.Configs) != 1 || d.Configs[0].Source != "DYNAMIC_DEFAULT_BROKER_CONFIG" {
			return errorf("broker 1 after delete: %+v", d.Configs)
		}
		return nil
	})
	// User quotas go through AlterClientQuotas and DescribeClientQuotas.
	alter("user", "alice", "--set", "producer_byte_rate=1048576")
	if e, ok := entry(describe("user", "alice"), "producer_byte_rate"); !ok || e.Value != "1048576" || e.Source != "QUOTA" {
		t.Errorf("user alice quotas: %+v", e)
	}
}
