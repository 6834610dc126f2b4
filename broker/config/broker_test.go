package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseProperties(t *testing.T) {
	in := "# comment\n! other\nbroker.id=3\nlisteners = PLAINTEXT://:9093\nlog.dirs=/a,\\\n  /b\nzookeeper.connect: localhost:2181/kafka\n"
	props, err := ParseProperties(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"broker.id": "3", "listeners": "PLAINTEXT://:9093", "log.dirs": "/a,/b", "zookeeper.connect": "localhost:2181/kafka"}
	for k, v := range want {
		if props[k] != v {
			t.Errorf("%s = %q, want %q", k, props[k], v)
		}
	}
	if _, err := ParseProperties(strings.NewReader("novalue\n")); err == nil {
		t.Error("a line without = must be an error")
	}
}

func TestBrokerValidation(t *testing.T) {
	if _, err := NewBroker(map[string]string{"num.partitions": "zero"}); err == nil {
		t.Error("non-numeric num.partitions accepted")
	}
	if _, err := NewBroker(map[string]string{"log.message.timestamp.type": "Sometime"}); err == nil {
		t.Error("bad timestamp type accepted")
	}
	if got := Unknown(map[string]string{"broker.id": "1", "no.such.thing": "x"}); len(got) != 1 || got[0] != "no.such.thing" {
		t.Errorf("Unknown = %v", got)
	}
}

func TestTopicSynonyms(t *testing.T) {
	b, err := NewBroker(map[string]string{"log.retention.hours": "2", "log.segment.bytes": "1000"})
	if err != nil {
		t.Fatal(err)
	}
	tc := b.Topic(nil)
	if got := tc.Retention; got != 2*time.Hour {
		t.Errorf("retention.ms = %v, want from log.retention.hours", got)
	}
	if got := tc.SegmentBytes; got != 1000 {
		t.Errorf("segment.bytes = %d", got)
	}
	if got := tc.SegmentRoll; got != 168*time.Hour {
		t.Errorf("segment.ms = %v", got)
	}
	v, syn := b.TopicValue("retention.ms", map[string]string{"retention.ms": "5"})
	if v.Value != "5" || v.Source != SourceDynamicTopic || len(syn) < 2 {
		t.Errorf("override: %+v %+v", v, syn)
	}
	b.SetDynamic(map[string]string{"log.retention.ms": "7"})
	if got := b.Topic(nil).Retention; got != 7*time.Millisecond {
		t.Errorf("dynamic log.retention.ms not used: %v", got)
	}
	if err := ValidateTopicConfigs(map[string]string{"cleanup.policy": "compact,delete"}); err != nil {
		t.Error(err)
	}
	if err := ValidateTopicConfigs(map[string]string{"retention.mss": "1"}); err == nil {
		t.Error("unknown topic config accepted")
	}
}

func TestFetchWaitBelowLagTime(t *testing.T) {
	if _, err := NewBroker(map[string]string{"replica.fetch.wait.max.ms": "5000", "replica.lag.time.max.ms": "3000"}); err == nil {
		t.Fatal("replica.fetch.wait.max.ms above replica.lag.time.max.ms accepted")
	}
}

func TestBrokerSynonymsInOrder(t *testing.T) {
	b, err := NewBroker(map[string]string{"log.retention.bytes": "100"})
	if err != nil {
		t.Fatal(err)
	}
	b.SetDynamic(map[string]string{"log.retention.bytes": "300"})
	b.SetDynamicDefault(map[string]string{"log.retention.bytes": "200"})
	syn := b.Synonyms("log.retention.bytes")
	want := []Source{SourceDynamicBroker, SourceDynamicDefaultBroker, SourceStaticBroker, SourceDefault}
	if len(syn) != len(want) {
		t.Fatalf("synonyms %+v", syn)
	}
	for i, s := range syn {
		if s.Source != want[i] || s.Name != "log.retention.bytes" {
			t.Errorf("synonym %d: %+v, want source %v", i, s, want[i])
		}
	}
	if syn[0].Value != "300" || syn[1].Value != "200" || syn[2].Value != "100" || syn[3].Value != "-1" {
		t.Errorf("values %+v", syn)
	}
}

func TestParseThrottledReplicas(t *testing.T) {
	r, err := ParseThrottledReplicas("0:101, 0:102,3:101")
	if err != nil || !r.Has(0, 102) || !r.Has(3, 101) || r.Has(3, 102) || r.Has(1, 101) {
		t.Errorf("%+v, %v", r, err)
	}
	if r, err := ParseThrottledReplicas("*"); err != nil || !r.Has(7, 7) {
		t.Errorf("*: %+v, %v", r, err)
	}
	if r, err := ParseThrottledReplicas(""); err != nil || r.Has(0, 0) {
		t.Errorf("empty: %+v, %v", r, err)
	}
	for _, bad := range []string{"0", "a:1", "0:-1", "*,0:1"} {
		if _, err := ParseThrottledReplicas(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// Throttle is cached between dynamic changes; each change must be seen.
func TestThrottleFollowsDynamicChanges(t *testing.T) {
	b, err := NewBroker(map[string]string{"leader.replication.throttled.rate": "100"})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Throttle().LeaderRate; got != 100 {
		t.Fatalf("static rate: got %d, want 100", got)
	}
	b.SetDynamicDefault(map[string]string{"leader.replication.throttled.rate": "200"})
	if got := b.Throttle().LeaderRate; got != 200 {
		t.Fatalf("after the cluster default: got %d, want 200", got)
	}
	b.SetDynamic(map[string]string{"leader.replication.throttled.rate": "300", "follower.replication.throttled.rate": "400"})
	if got := b.Throttle(); got.LeaderRate != 300 || got.FollowerRate != 400 {
		t.Fatalf("after the per-broker value: got %+v, want rates 300 and 400", got)
	}
	b.SetDynamic(nil)
	if got := b.Throttle(); got.LeaderRate != 200 || got.FollowerRate == 400 {
		t.Fatalf("after removing the per-broker value: got %+v, want leader 200 and follower the default", got)
	}
}
