package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicConfig returns one config entry of a topic as the broker describes it.
func topicConfig(t testing.TB, adm *kadm.Client, topic, key string) kadm.Config {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(testCtx(t, 10*time.Second), topic)
	if err != nil {
		t.Fatalf("DescribeTopicConfigs %s: %v", topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("DescribeTopicConfigs %s: %v %v", topic, err, rc.Err)
	}
	for _, c := range rc.Configs {
		if c.Key == key {
			return c
		}
	}
	t.Fatalf("DescribeTopicConfigs %s: no %s among %d configs", topic, key, len(rc.Configs))
	return kadm.Config{}
}

func expectConfig(t testing.TB, adm *kadm.Client, topic, key, value string, source kmsg.ConfigSource) {
	t.Helper()
	c := topicConfig(t, adm, topic, key)
	if c.MaybeValue() != value || c.Source != source {
		t.Errorf("%s %s = %q (%v), want %q (%v)", topic, key, c.MaybeValue(), c.Source, value, source)
	}
}

// partitionDirs lists the entries of the log dir that belong to topic, including
// directories renamed for deletion.
func partitionDirs(t testing.TB, dir, topic string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), topic+"-") {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestTopicAdmin(t *testing.T) {
	b := startBroker(t)
	adm := b.Admin(t)
	ctx := testCtx(t, 2*time.Minute)
	const topic = "admin"

	// Validation only: nothing is created.
	vr, err := adm.ValidateCreateTopics(ctx, 2, 1, nil, topic)
	if err != nil || vr[topic].Err != nil {
		t.Fatalf("ValidateCreateTopics: %v %v", err, vr[topic].Err)
	}
	if td, err := adm.ListTopics(ctx); err != nil || td.Has(topic) {
		t.Fatalf("validate-only created the topic (%v)", err)
	}

	// Bad requests are refused with Kafka's errors and create nothing.
	bad := []struct {
		name    string
		topic   string
		parts   int32
		configs map[string]*string
		want    error
	}{
		{"bad config value", "bad-value", 1, map[string]*string{"retention.ms": kadm.StringPtr("soon")}, kerr.InvalidConfig},
		{"unknown config", "bad-key", 1, map[string]*string{"no.such.config": kadm.StringPtr("1")}, kerr.InvalidConfig},
		{"bad cleanup policy", "bad-policy", 1, map[string]*string{"cleanup.policy": kadm.StringPtr("shred")}, kerr.InvalidConfig},
		{"bad name", "bad/name", 1, nil, kerr.InvalidTopicException},
		{"dot name", "..", 1, nil, kerr.InvalidTopicException},
		{"long name", strings.Repeat("x", 250), 1, nil, kerr.InvalidTopicException},
		{"zero partitions", "zero", 0, nil, kerr.InvalidPartitions},
		{"replication above brokers", "rf", 1, nil, kerr.InvalidReplicationFactor},
	}
	for _, c := range bad {
		rf := int16(1)
		if c.name == "replication above brokers" {
			rf = 3
		}
		resp, err := adm.CreateTopics(ctx, c.parts, rf, c.configs, c.topic)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := resp[c.topic].Err; !errors.Is(got, c.want) {
			t.Errorf("%s: error %v, want %v", c.name, got, c.want)
		}
		if len(partitionDirs(t, b.Dir(), c.topic)) != 0 {
			t.Errorf("%s: partition dirs created", c.name)
		}
	}

	createTopic(t, adm, topic, 2, map[string]*string{
		"retention.ms":      kadm.StringPtr("3600000"),
		"max.message.bytes": kadm.StringPtr("2000"),
	})
	if resp, err := adm.CreateTopics(ctx, 2, 1, nil, topic); err != nil || !errors.Is(resp[topic].Err, kerr.TopicAlreadyExists) {
		t.Errorf("second create: %v %v, want TOPIC_ALREADY_EXISTS", err, resp[topic].Err)
	}
	expectConfig(t, adm, topic, "retention.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig)
	expectConfig(t, adm, topic, "max.message.bytes", "2000", kmsg.ConfigSourceDynamicTopicConfig)
	expectConfig(t, adm, topic, "segment.bytes", "1073741824", kmsg.ConfigSourceDefaultConfig)
	expectConfig(t, adm, topic, "cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig)

	// The override is enforced, not just stored.
	prod := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()))
	big := &kgo.Record{Partition: 0, Value: bytes.Repeat([]byte("x"), 5000)}
	if err := prod.ProduceSync(ctx, big).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("5000-byte record with max.message.bytes=2000: %v, want MESSAGE_TOO_LARGE", err)
	}

	// Incremental alter: set one, delete one.
	alter := func(ops ...kadm.AlterConfig) {
		t.Helper()
		resp, err := adm.AlterTopicConfigs(ctx, ops, topic)
		if err != nil {
			t.Fatalf("IncrementalAlterConfigs: %v", err)
		}
		for _, r := range resp {
			if r.Err != nil {
				t.Fatalf("IncrementalAlterConfigs %s: %v %s", r.Name, r.Err, r.ErrMessage)
			}
		}
	}
	alter(kadm.AlterConfig{Op: kadm.SetConfig, Name: "segment.bytes", Value: kadm.StringPtr("1048576")},
		kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "max.message.bytes"})
	expectConfig(t, adm, topic, "segment.bytes", "1048576", kmsg.ConfigSourceDynamicTopicConfig)
	expectConfig(t, adm, topic, "max.message.bytes", "1048588", kmsg.ConfigSourceDefaultConfig)
	expectConfig(t, adm, topic, "retention.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig)
	if err := prod.ProduceSync(ctx, big).FirstErr(); err != nil {
		t.Fatalf("5000-byte record after deleting the max.message.bytes override: %v", err)
	}
	if resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("never")}}, topic); err != nil || len(resp) != 1 || !errors.Is(resp[0].Err, kerr.InvalidConfig) {
		t.Errorf("incremental alter with a bad value: %v %+v, want INVALID_CONFIG", err, resp)
	}

	// Overrides survive a restart.
	b.Stop(t)
	b.Restart(t)
	expectConfig(t, adm, topic, "segment.bytes", "1048576", kmsg.ConfigSourceDynamicTopicConfig)
	expectConfig(t, adm, topic, "retention.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig)

	// The legacy AlterConfigs replaces the whole set: what is not named reverts.
	resp, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "cleanup.policy", Value: kadm.StringPtr("compact")}}, topic)
	if err != nil || len(resp) != 1 || resp[0].Err != nil {
		t.Fatalf("AlterConfigs: %v %+v", err, resp)
	}
	expectConfig(t, adm, topic, "cleanup.policy", "compact", kmsg.ConfigSourceDynamicTopicConfig)
	expectConfig(t, adm, topic, "segment.bytes", "1073741824", kmsg.ConfigSourceDefaultConfig)
	expectConfig(t, adm, topic, "retention.ms", "604800000", kmsg.ConfigSourceDefaultConfig)

	// Delete: gone from the metadata and from disk; the name can be reused.
	if got := partitionDirs(t, b.Dir(), topic); len(got) != 2 {
		t.Fatalf("partition dirs before delete: %v", got)
	}
	dr, err := adm.DeleteTopics(ctx, topic)
	if err != nil || dr[topic].Err != nil {
		t.Fatalf("DeleteTopics: %v %v", err, dr[topic].Err)
	}
	eventually(t, 30*time.Second, func() error {
		if got := partitionDirs(t, b.Dir(), topic); len(got) != 0 {
			return fmt.Errorf("still on disk after DeleteTopics: %v", got)
		}
		return nil
	})
	if td, err := adm.ListTopics(ctx); err != nil || td.Has(topic) {
		t.Fatalf("topic still listed after delete (%v)", err)
	}
	if dr, err := adm.DeleteTopics(ctx, topic); err != nil || !errors.Is(dr[topic].Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("deleting it again: %v %v, want UNKNOWN_TOPIC_OR_PARTITION", err, dr[topic].Err)
	}
	createTopic(t, adm, topic, 1, nil)
	end, err := endOffsets(ctx, adm, topic)
	if err != nil {
		t.Fatal(err)
	}
	if end[0] != 0 {
		t.Fatalf("recreated topic starts at end offset %d, want 0", end[0])
	}
	expectConfig(t, adm, topic, "cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig)
}
