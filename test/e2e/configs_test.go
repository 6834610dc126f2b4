package e2e

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func brokerConfig(t testing.TB, adm *kadm.Client, key string, brokers ...int32) kadm.Config {
	t.Helper()
	rcs, err := adm.DescribeBrokerConfigs(testCtx(t, 10*time.Second), brokers...)
	if err != nil {
		t.Fatalf("DescribeConfigs broker %v: %v", brokers, err)
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			t.Fatalf("DescribeConfigs broker %s: %v", rc.Name, rc.Err)
		}
		for _, c := range rc.Configs {
			if c.Key == key {
				return c
			}
		}
	}
	t.Fatalf("broker %v has no %s", brokers, key)
	return kadm.Config{}
}

// TestConfigPrecedence: a topic setting falls back through a dynamic override, the
// dynamic cluster default, the broker's static setting (--override) and the
// default, and DescribeConfigs names the source that won; a dynamic cluster-wide
// default also takes effect.
func TestConfigPrecedence(t *testing.T) {
	b := startBroker(t, "--override", "log.retention.hours=48", "--override", "num.partitions=3",
		"--override", "log.retention.check.interval.ms=100")
	adm := b.Admin(t)
	ctx := testCtx(t, time.Minute)

	if c := brokerConfig(t, adm, "num.partitions", 0); c.MaybeValue() != "3" || c.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Errorf("broker num.partitions = %q (%v), want 3 from the static config", c.MaybeValue(), c.Source)
	}
	const topic = "precedence"
	createTopic(t, adm, topic, 1, map[string]*string{"segment.bytes": kadm.StringPtr("1024")})
	expectConfig(t, adm, topic, "retention.ms", strconv.Itoa(48*3600000), kmsg.ConfigSourceStaticBrokerConfig)
	expectConfig(t, adm, topic, "retention.bytes", "-1", kmsg.ConfigSourceDefaultConfig)

	// A dynamic cluster-wide default (broker resource "") beats the static value and
	// applies to topics without their own override, at once.
	resp, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.retention.bytes", Value: kadm.StringPtr("4096")}})
	if err != nil || len(resp) != 1 || resp[0].Err != nil {
		t.Fatalf("setting the cluster default log.retention.bytes: %v %+v", err, resp)
	}
	expectConfig(t, adm, topic, "retention.bytes", "4096", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
	prod := b.Client(t, kgo.ProducerBatchCompression(kgo.NoCompression()))
	produceNumbered(t, prod, topic, 0, 0, 60, 200, time.Time{})
	waitStartOffset(t, adm, topic, 0, 20)

	// The topic's own override beats every broker level.
	if r, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("1000000")}}, topic); err != nil || r[0].Err != nil {
		t.Fatalf("topic override: %v %+v", err, r)
	}
	expectConfig(t, adm, topic, "retention.ms", "1000000", kmsg.ConfigSourceDynamicTopicConfig)

	// Bad broker settings are refused and change nothing.
	resp, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.retention.bytes", Value: kadm.StringPtr("lots")}})
	if err != nil || len(resp) != 1 || !errors.Is(resp[0].Err, kerr.InvalidConfig) {
		t.Errorf("cluster default log.retention.bytes=lots: %v %+v, want INVALID_CONFIG", err, resp)
	}
	expectConfig(t, adm, topic, "retention.bytes", "4096", kmsg.ConfigSourceDynamicDefaultBrokerConfig)

	// Dynamic settings survive a restart.
	b.Stop(t)
	b.Restart(t)
	expectConfig(t, adm, topic, "retention.bytes", "4096", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
	expectConfig(t, adm, topic, "retention.ms", "1000000", kmsg.ConfigSourceDynamicTopicConfig)
}
