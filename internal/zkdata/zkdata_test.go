package zkdata

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// sameJSON compares two JSON documents as values, so key order (which Kafka
// leaves to its hash maps) does not matter.
func sameJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("our JSON %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("golden JSON %s: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("encoded\n  %s\nKafka writes\n  %s", got, want)
	}
}

func TestPaths(t *testing.T) {
	for got, want := range map[string]string{
		BrokerPath(3):                   "/brokers/ids/3",
		TopicPath("orders"):             "/brokers/topics/orders",
		PartitionStatePath("orders", 7): "/brokers/topics/orders/partitions/7/state",
		DeleteTopicPath("orders"):       "/admin/delete_topics/orders",
		ConfigTopicPath("orders"):       "/config/topics/orders",
		ConfigBrokerPath("<default>"):   "/config/brokers/<default>",
		IsrChangePath():                 "/isr_change_notification/isr_change_",
		ConfigChangePath():              "/config/changes/config_change_",
		LogDirEventPath():               "/log_dir_event_notification/log_dir_event_",
	} {
		if got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}

func TestBrokerInfoKafka28(t *testing.T) {
	// As registered by a Kafka 2.8 broker with listeners=PLAINTEXT://localhost:9092.
	kafka := `{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://localhost:9092"],"jmx_port":-1,"port":9092,"host":"localhost","version":5,"timestamp":"1624550219513"}`
	b, err := DecodeBrokerInfo(1, []byte(kafka))
	if err != nil {
		t.Fatal(err)
	}
	want := BrokerInfo{
		ID: 1, Version: 5, Host: "localhost", Port: 9092, JmxPort: -1,
		Endpoints: []Endpoint{{Listener: "PLAINTEXT", SecurityProtocol: "PLAINTEXT", Host: "localhost", Port: 9092}},
		Timestamp: time.UnixMilli(1624550219513),
		Features:  map[string]FeatureRange{},
	}
	if !reflect.DeepEqual(b, want) {
		t.Fatalf("decoded %+v\nwant    %+v", b, want)
	}
	sameJSON(t, EncodeBrokerInfo(want), kafka)
	b.Host, b.Port = "", 0
	sameJSON(t, EncodeBrokerInfo(b), kafka)
}

func TestBrokerInfoListenersAndRack(t *testing.T) {
	kafka := `{"listener_security_protocol_map":{"CLIENT":"SSL","REPLICATION":"PLAINTEXT"},"endpoints":["CLIENT://host1:9092","REPLICATION://host1:9093"],"rack":"dc1","jmx_port":9999,"host":"host1","timestamp":"2233345666","port":9093,"version":4}`
	b, err := DecodeBrokerInfo(2, []byte(kafka))
	if err != nil {
		t.Fatal(err)
	}
	if b.Rack != "dc1" || b.JmxPort != 9999 || len(b.Endpoints) != 2 || b.Endpoints[0].SecurityProtocol != "SSL" || b.Endpoints[1].Port != 9093 {
		t.Fatalf("decoded %+v", b)
	}
	if e, ok := b.Endpoint("replication"); !ok || e.Host != "host1" {
		t.Fatalf("endpoint lookup %+v %v", e, ok)
	}
	b.Host = ""
	sameJSON(t, EncodeBrokerInfo(b), kafka)

	v5 := EncodeBrokerInfo(BrokerInfo{ID: 3, Endpoints: []Endpoint{{Listener: "SSL", SecurityProtocol: "SSL", Host: "h", Port: 1}}, Timestamp: time.UnixMilli(5)})
	sameJSON(t, v5, `{"version":5,"host":null,"port":-1,"endpoints":["SSL://h:1"],"listener_security_protocol_map":{"SSL":"SSL"},"jmx_port":0,"timestamp":"5","features":{}}`)
}

func TestBrokerInfoOldVersions(t *testing.T) {
	v1, err := DecodeBrokerInfo(0, []byte(`{"version":1,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666"}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(v1.Endpoints) != 1 || v1.Endpoints[0].String() != "PLAINTEXT://localhost:9092" {
		t.Fatalf("v1 %+v", v1)
	}
	v2, err := DecodeBrokerInfo(0, []byte(`{"version":2,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666","endpoints":["PLAINTEXT://host1:9092","SSL://[::1]:9093"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(v2.Endpoints) != 2 || v2.Endpoints[1].Host != "::1" || v2.Endpoints[1].SecurityProtocol != "SSL" || v2.Endpoints[1].String() != "SSL://[::1]:9093" {
		t.Fatalf("v2 %+v", v2)
	}
	for _, bad := range []string{
		`{"version":0}`,
		`not json`,
		`{"version":2,"endpoints":["CLIENT://h:1"],"jmx_port":1}`,
		`{"version":4,"endpoints":["PLAINTEXT://h:x"],"jmx_port":1}`,
		`{"version":4,"endpoints":["h:1"],"jmx_port":1}`,
		`{"version":1,"jmx_port":1}`,
		`{"version":5,"endpoints":[],"timestamp":"soon"}`,
	} {
		if _, err := DecodeBrokerInfo(9, []byte(bad)); err == nil {
			t.Errorf("decoded %s", bad)
		}
	}
}

func TestController(t *testing.T) {
	kafka := `{"version":1,"brokerid":1,"timestamp":"1624550220297"}`
	c, err := DecodeController([]byte(kafka))
	if err != nil || c.BrokerID != 1 || c.Timestamp.UnixMilli() != 1624550220297 {
		t.Fatalf("%+v %v", c, err)
	}
	sameJSON(t, EncodeController(c), kafka)
	if _, err := DecodeController([]byte(`{"version":1}`)); err == nil {
		t.Fatal("decoded a controller without brokerid")
	}
	epoch, err := DecodeControllerEpoch([]byte("17"))
	if err != nil || epoch != 17 || string(EncodeControllerEpoch(17)) != "17" {
		t.Fatalf("epoch %d %v", epoch, err)
	}
	if _, err := DecodeControllerEpoch([]byte("x")); err == nil {
		t.Fatal("decoded a bad epoch")
	}
}

func TestControllerToken(t *testing.T) {
	in := ControllerToken{Epoch: 7, Token: []byte("0123456789abcdef")}
	data := EncodeControllerToken(in)
	sameJSON(t, data, `{"version":1,"controller_epoch":7,"token":"MDEyMzQ1Njc4OWFiY2RlZg=="}`)
	out, err := DecodeControllerToken(data)
	if err != nil || out.Epoch != 7 || string(out.Token) != string(in.Token) {
		t.Fatalf("%+v %v", out, err)
	}
	for _, bad := range []string{
		`{"version":1,"token":"MDEyMzQ1Njc4OWFiY2RlZg=="}`,
		`{"version":1,"controller_epoch":7,"token":"MDEy"}`,
		`{"version":1,"controller_epoch":7}`,
		`x`,
	} {
		if _, err := DecodeControllerToken([]byte(bad)); err == nil {
			t.Errorf("decoded %s", bad)
		}
	}
}

func TestClusterID(t *testing.T) {
	kafka := `{"version":"1","id":"ZzT0y6YBRAqjN0bwjW-0mA"}`
	id, err := DecodeClusterID([]byte(kafka))
	if err != nil || id != "ZzT0y6YBRAqjN0bwjW-0mA" {
		t.Fatalf("%q %v", id, err)
	}
	sameJSON(t, EncodeClusterID(id), kafka)
	if _, err := DecodeClusterID([]byte(`{"version":"1"}`)); err == nil {
		t.Fatal("decoded a cluster id znode without id")
	}
}

func TestNewUUID(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id, err := RandomUUID()
		if err != nil {
			t.Fatal(err)
		}
		if len(id) != 22 || strings.HasPrefix(id, "-") || seen[id] {
			t.Fatalf("id %q", id)
		}
		seen[id] = true
	}
	// Bytes that encode with a leading '-' (0xf8...) are skipped.
	src := bytes.NewReader(append(bytes.Repeat([]byte{0xf8}, 16), bytes.Repeat([]byte{1}, 16)...))
	id, err := NewUUID(src)
	if err != nil || strings.HasPrefix(id, "-") {
		t.Fatalf("%q %v", id, err)
	}
	if _, err := NewUUID(bytes.NewReader(nil)); err == nil {
		t.Fatal("id from no randomness")
	}
}

func TestTopicAssignment(t *testing.T) {
	kafka := `{"removing_replicas":{},"partitions":{"2":[3,1,2],"1":[2,3,1],"0":[1,2,3]},"topic_id":"cc4hrSbHQ4a0GrVCwyNBaw","adding_replicas":{"1":[1]},"version":2}`
	a, err := DecodeTopicAssignment([]byte(kafka))
	if err != nil {
		t.Fatal(err)
	}
	want := TopicAssignment{
		Partitions: map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}, 2: {3, 1, 2}},
		Adding:     map[int32][]int32{1: {1}},
		Removing:   map[int32][]int32{},
		TopicID:    "cc4hrSbHQ4a0GrVCwyNBaw",
	}
	if !reflect.DeepEqual(a, want) {
		t.Fatalf("decoded %+v", a)
	}
	sameJSON(t, EncodeTopicAssignment(a), kafka)
	sameJSON(t, EncodeTopicAssignment(TopicAssignment{Partitions: map[int32][]int32{0: {1}}}),
		`{"version":2,"partitions":{"0":[1]},"adding_replicas":{},"removing_replicas":{}}`)
	old, err := DecodeTopicAssignment([]byte(`{"version":1,"partitions":{"0":[0,1]}}`))
	if err != nil || len(old.Partitions[0]) != 2 || old.TopicID != "" {
		t.Fatalf("v1 %+v %v", old, err)
	}
	if _, err := DecodeTopicAssignment([]byte(`{"version":2,"partitions":{"x":[1]}}`)); err == nil {
		t.Fatal("decoded a non-numeric partition")
	}
}

func TestLeaderIsr(t *testing.T) {
	kafka := `{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":5,"isr":[2,3]}`
	s, err := DecodeLeaderIsr([]byte(kafka), 7)
	if err != nil {
		t.Fatal(err)
	}
	want := LeaderIsr{Leader: 2, LeaderEpoch: 5, ISR: []int32{2, 3}, ControllerEpoch: 1, ZkVersion: 7}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("decoded %+v", s)
	}
	sameJSON(t, EncodeLeaderIsr(s), kafka)
	sameJSON(t, EncodeLeaderIsr(LeaderIsr{Leader: NoLeader}), `{"controller_epoch":0,"leader":-1,"version":1,"leader_epoch":0,"isr":[]}`)
	if _, err := DecodeLeaderIsr([]byte(`{"leader":1}`), 0); err == nil {
		t.Fatal("decoded a partial state")
	}
}

func TestPartitionLists(t *testing.T) {
	kafka := `{"version":1,"partitions":[{"topic":"orders","partition":0},{"topic":"orders","partition":1}]}`
	tps, err := DecodeIsrChange([]byte(kafka))
	want := []TopicPartition{{"orders", 0}, {"orders", 1}}
	if err != nil || !reflect.DeepEqual(tps, want) {
		t.Fatalf("%v %v", tps, err)
	}
	sameJSON(t, EncodeIsrChange([]TopicPartition{{"orders", 1}, {"orders", 0}}), kafka)
	tps, err = DecodePreferredReplicaElection([]byte(kafka))
	if err != nil || !reflect.DeepEqual(tps, want) {
		t.Fatalf("%v %v", tps, err)
	}
	sameJSON(t, EncodePreferredReplicaElection(want), kafka)
	if _, err := DecodeIsrChange([]byte(`{"version":1,"partitions":[{"topic":"t"}]}`)); err == nil {
		t.Fatal("decoded an entry without partition")
	}
}

func TestReassignment(t *testing.T) {
	kafka := `{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[2,3]},{"topic":"b","partition":4,"replicas":[1]}]}`
	rs, err := DecodeReassignment([]byte(kafka))
	if err != nil || len(rs) != 2 || rs[1].Topic != "b" || rs[0].Replicas[1] != 3 {
		t.Fatalf("%+v %v", rs, err)
	}
	sameJSON(t, EncodeReassignment([]Reassignment{rs[1], rs[0]}), kafka)
	if _, err := DecodeReassignment([]byte(`{"version":1,"partitions":[{"partition":0}]}`)); err == nil {
		t.Fatal("decoded an entry without topic")
	}
}

func TestLogDirEvent(t *testing.T) {
	kafka := `{"version":1,"broker":2,"event":1}`
	b, err := DecodeLogDirEvent([]byte(kafka))
	if err != nil || b != 2 {
		t.Fatalf("%d %v", b, err)
	}
	sameJSON(t, EncodeLogDirEvent(2), kafka)
}

func TestConfig(t *testing.T) {
	kafka := `{"version":1,"config":{"retention.ms":"86400000","cleanup.policy":"compact"}}`
	c, err := DecodeConfig([]byte(kafka))
	if err != nil || c["retention.ms"] != "86400000" || c["cleanup.policy"] != "compact" || len(c) != 2 {
		t.Fatalf("%v %v", c, err)
	}
	sameJSON(t, EncodeConfig(c), kafka)
	sameJSON(t, EncodeConfig(nil), `{"version":1,"config":{}}`)
	empty, err := DecodeConfig(nil)
	if err != nil || len(empty) != 0 {
		t.Fatalf("%v %v", empty, err)
	}
	loose, err := DecodeConfig([]byte(`{"version":1,"config":{"segment.bytes":1024,"x":true}}`))
	if err != nil || loose["segment.bytes"] != "1024" || loose["x"] != "true" {
		t.Fatalf("%v %v", loose, err)
	}
}

func TestConfigChange(t *testing.T) {
	kafka := `{"version":2,"entity_path":"topics/orders"}`
	p, err := DecodeConfigChange([]byte(kafka))
	if err != nil || p != "topics/orders" {
		t.Fatalf("%q %v", p, err)
	}
	sameJSON(t, EncodeConfigChange(p), kafka)
	p, err = DecodeConfigChange([]byte(`{"version":1,"entity_type":"brokers","entity_name":"1"}`))
	if err != nil || p != "brokers/1" {
		t.Fatalf("v1 %q %v", p, err)
	}
	for _, bad := range []string{`{"version":3,"entity_path":"x"}`, `{"version":2}`, `{"version":1,"entity_type":"topics"}`} {
		if _, err := DecodeConfigChange([]byte(bad)); err == nil {
			t.Errorf("decoded %s", bad)
		}
	}
}
