package zkdata

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ControllerInfo is the ephemeral /controller znode: who won the election.
type ControllerInfo struct {
	BrokerID  int32
	Timestamp time.Time
}

// EncodeController writes {"version":1,"brokerid":N,"timestamp":"<ms>"}.
func EncodeController(c ControllerInfo) []byte {
	return marshal(map[string]any{
		"version":   1,
		"brokerid":  c.BrokerID,
		"timestamp": strconv.FormatInt(c.Timestamp.UnixMilli(), 10),
	})
}

// DecodeController reads /controller.
func DecodeController(data []byte) (ControllerInfo, error) {
	var j struct {
		BrokerID  *int32 `json:"brokerid"`
		Timestamp string `json:"timestamp"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return ControllerInfo{}, fmt.Errorf("controller znode: %w", err)
	}
	if j.BrokerID == nil {
		return ControllerInfo{}, fmt.Errorf("controller znode %s: no brokerid", data)
	}
	c := ControllerInfo{BrokerID: *j.BrokerID}
	if j.Timestamp != "" {
		ms, err := strconv.ParseInt(j.Timestamp, 10, 64)
		if err != nil {
			return ControllerInfo{}, fmt.Errorf("controller znode: timestamp %q: %w", j.Timestamp, err)
		}
		c.Timestamp = time.UnixMilli(ms)
	}
	return c, nil
}

// EncodeControllerEpoch writes the epoch as a decimal string.
func EncodeControllerEpoch(epoch int32) []byte {
	return []byte(strconv.FormatInt(int64(epoch), 10))
}

// DecodeControllerEpoch reads /controller_epoch.
func DecodeControllerEpoch(data []byte) (int32, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("controller epoch %q: %w", data, err)
	}
	return int32(n), nil
}

// ControllerTokenBytes is the length of a controller token.
const ControllerTokenBytes = 16

// ControllerToken is /ktool/controller_token: a random secret of the
// controller at Epoch. Brokers believe a controller request carrying it
// without checking its content against the store.
type ControllerToken struct {
	Epoch int32
	Token []byte
}

// EncodeControllerToken writes {"version":1,"controller_epoch":E,"token":"<base64>"}.
func EncodeControllerToken(t ControllerToken) []byte {
	return marshal(map[string]any{"version": 1, "controller_epoch": t.Epoch, "token": t.Token})
}

// DecodeControllerToken reads /ktool/controller_token.
func DecodeControllerToken(data []byte) (ControllerToken, error) {
	var j struct {
		Epoch *int32 `json:"controller_epoch"`
		Token []byte `json:"token"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return ControllerToken{}, fmt.Errorf("controller token znode: %w", err)
	}
	if j.Epoch == nil || len(j.Token) != ControllerTokenBytes {
		return ControllerToken{}, errors.New("controller token znode: no epoch or a token of the wrong length")
	}
	return ControllerToken{Epoch: *j.Epoch, Token: j.Token}, nil
}

// EncodeClusterID writes {"version":"1","id":"<id>"} (the version is a
// string there, as Kafka writes it).
func EncodeClusterID(id string) []byte {
	return marshal(map[string]string{"version": "1", "id": id})
}

// DecodeClusterID reads /cluster/id.
func DecodeClusterID(data []byte) (string, error) {
	var j struct {
		ID *string `json:"id"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return "", fmt.Errorf("cluster id znode: %w", err)
	}
	if j.ID == nil || *j.ID == "" {
		return "", fmt.Errorf("cluster id znode %s: no id", data)
	}
	return *j.ID, nil
}

// NewUUID returns a random id in Kafka's form (cluster ids, topic ids): 16
// random bytes, version 4 marked, URL-safe base64 without padding. Like
// Kafka it never returns an id starting with '-', which would read as a
// command-line flag.
func NewUUID(random io.Reader) (string, error) {
	for {
		var b [16]byte
		if _, err := io.ReadFull(random, b[:]); err != nil {
			return "", fmt.Errorf("random id: %w", err)
		}
		b[6] = b[6]&0x0f | 0x40
		b[8] = b[8]&0x3f | 0x80
		if b == [16]byte{} {
			continue
		}
		id := base64.RawURLEncoding.EncodeToString(b[:])
		if !strings.HasPrefix(id, "-") {
			return id, nil
		}
	}
}

// RandomUUID is NewUUID from crypto/rand.
func RandomUUID() (string, error) { return NewUUID(rand.Reader) }

// TopicAssignment is /brokers/topics/<topic>: the replicas of each
// partition, preferred leader first, and an ongoing reassignment's adding
// and removing replicas.
type TopicAssignment struct {
	Partitions map[int32][]int32
	Adding     map[int32][]int32
	Removing   map[int32][]int32
	// TopicID is the topic's id (KIP-516), written by Kafka 2.8; empty when
	// the znode has none.
	TopicID string
}

func partitionMap(m map[int32][]int32) map[string][]int32 {
	out := make(map[string][]int32, len(m))
	for p, rs := range m {
		if rs == nil {
			rs = []int32{}
		}
		out[strconv.Itoa(int(p))] = rs
	}
	return out
}

// EncodeTopicAssignment writes the version 2 format.
func EncodeTopicAssignment(a TopicAssignment) []byte {
	m := map[string]any{
		"version":           2,
		"partitions":        partitionMap(a.Partitions),
		"adding_replicas":   partitionMap(a.Adding),
		"removing_replicas": partitionMap(a.Removing),
	}
	if a.TopicID != "" {
		m["topic_id"] = a.TopicID
	}
	return marshal(m)
}

func parsePartitionMap(m map[string][]int32) (map[int32][]int32, error) {
	out := make(map[int32][]int32, len(m))
	for k, rs := range m {
		p, err := strconv.ParseInt(k, 10, 32)
		if err != nil || p < 0 {
			return nil, fmt.Errorf("bad partition %q", k)
		}
		out[int32(p)] = rs
	}
	return out, nil
}

// DecodeTopicAssignment reads /brokers/topics/<topic> (versions 1 and 2).
func DecodeTopicAssignment(data []byte) (TopicAssignment, error) {
	var j struct {
		Partitions map[string][]int32 `json:"partitions"`
		Adding     map[string][]int32 `json:"adding_replicas"`
		Removing   map[string][]int32 `json:"removing_replicas"`
		TopicID    string             `json:"topic_id"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return TopicAssignment{}, fmt.Errorf("topic assignment: %w", err)
	}
	var a TopicAssignment
	var err error
	if a.Partitions, err = parsePartitionMap(j.Partitions); err != nil {
		return TopicAssignment{}, fmt.Errorf("topic assignment: %w", err)
	}
	if a.Adding, err = parsePartitionMap(j.Adding); err != nil {
		return TopicAssignment{}, fmt.Errorf("topic assignment adding_replicas: %w", err)
	}
	if a.Removing, err = parsePartitionMap(j.Removing); err != nil {
		return TopicAssignment{}, fmt.Errorf("topic assignment removing_replicas: %w", err)
	}
	a.TopicID = j.TopicID
	return a, nil
}

// LeaderIsr is /brokers/topics/<t>/partitions/<p>/state. ZkVersion is the
// znode's version, not part of the JSON: updates are conditional on it.
type LeaderIsr struct {
	Leader          int32
	LeaderEpoch     int32
	ISR             []int32
	ControllerEpoch int32
	ZkVersion       int32
}

// NoLeader is the leader of a partition without one.
const NoLeader int32 = -1

// EncodeLeaderIsr writes {"controller_epoch":E,"leader":L,"version":1,
// "leader_epoch":LE,"isr":[...]}.
func EncodeLeaderIsr(s LeaderIsr) []byte {
	isr := s.ISR
	if isr == nil {
		isr = []int32{}
	}
	return marshal(map[string]any{
		"version":          1,
		"leader":           s.Leader,
		"leader_epoch":     s.LeaderEpoch,
		"controller_epoch": s.ControllerEpoch,
		"isr":              isr,
	})
}

// DecodeLeaderIsr reads a partition state znode whose version is zkVersion.
func DecodeLeaderIsr(data []byte, zkVersion int32) (LeaderIsr, error) {
	var j struct {
		Leader          *int32  `json:"leader"`
		LeaderEpoch     *int32  `json:"leader_epoch"`
		ISR             []int32 `json:"isr"`
		ControllerEpoch *int32  `json:"controller_epoch"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return LeaderIsr{}, fmt.Errorf("partition state: %w", err)
	}
	if j.Leader == nil || j.LeaderEpoch == nil || j.ControllerEpoch == nil || j.ISR == nil {
		return LeaderIsr{}, fmt.Errorf("partition state %s: leader, leader_epoch, isr and controller_epoch are required", data)
	}
	return LeaderIsr{Leader: *j.Leader, LeaderEpoch: *j.LeaderEpoch, ISR: j.ISR, ControllerEpoch: *j.ControllerEpoch, ZkVersion: zkVersion}, nil
}

// TopicPartition names one partition in notifications.
type TopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

func sortPartitions(tps []TopicPartition) []TopicPartition {
	out := append([]TopicPartition{}, tps...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

func encodePartitionList(tps []TopicPartition) []byte {
	return marshal(map[string]any{"version": 1, "partitions": sortPartitions(tps)})
}

func decodePartitionList(what string, data []byte) ([]TopicPartition, error) {
	var j struct {
		Partitions []struct {
			Topic     *string `json:"topic"`
			Partition *int32  `json:"partition"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	out := make([]TopicPartition, 0, len(j.Partitions))
	for _, p := range j.Partitions {
		if p.Topic == nil || p.Partition == nil {
			return nil, fmt.Errorf("%s %s: entry without topic or partition", what, data)
		}
		out = append(out, TopicPartition{Topic: *p.Topic, Partition: *p.Partition})
	}
	return out, nil
}

// EncodeIsrChange writes an /isr_change_notification/isr_change_<seq>
// znode: {"version":1,"partitions":[{"topic":..,"partition":..}]}.
func EncodeIsrChange(tps []TopicPartition) []byte { return encodePartitionList(tps) }

// DecodeIsrChange reads an ISR change notification.
func DecodeIsrChange(data []byte) ([]TopicPartition, error) {
	return decodePartitionList("isr change notification", data)
}

// EncodePreferredReplicaElection writes /admin/preferred_replica_election.
func EncodePreferredReplicaElection(tps []TopicPartition) []byte {
	return encodePartitionList(tps)
}

// DecodePreferredReplicaElection reads /admin/preferred_replica_election.
func DecodePreferredReplicaElection(data []byte) ([]TopicPartition, error) {
	return decodePartitionList("preferred replica election", data)
}

// Reassignment is one partition's target replicas in
// /admin/reassign_partitions.
type Reassignment struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
}

// EncodeReassignment writes {"version":1,"partitions":[{"topic":..,
// "partition":..,"replicas":[..]}]}.
func EncodeReassignment(rs []Reassignment) []byte {
	out := append([]Reassignment{}, rs...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	for i := range out {
		if out[i].Replicas == nil {
			out[i].Replicas = []int32{}
		}
	}
	return marshal(map[string]any{"version": 1, "partitions": out})
}

// DecodeReassignment reads /admin/reassign_partitions.
func DecodeReassignment(data []byte) ([]Reassignment, error) {
	var j struct {
		Partitions []Reassignment `json:"partitions"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("partition reassignment: %w", err)
	}
	for _, r := range j.Partitions {
		if r.Topic == "" || r.Partition < 0 {
			return nil, fmt.Errorf("partition reassignment %s: bad entry %+v", data, r)
		}
	}
	return j.Partitions, nil
}

// LogDirFailureEvent is the only event type of log dir notifications.
const LogDirFailureEvent = 1

// EncodeLogDirEvent writes {"version":1,"broker":N,"event":1}: broker N
// lost a log directory.
func EncodeLogDirEvent(broker int32) []byte {
	return marshal(map[string]any{"version": 1, "broker": broker, "event": LogDirFailureEvent})
}

// DecodeLogDirEvent returns the broker of a log dir event notification.
func DecodeLogDirEvent(data []byte) (int32, error) {
	var j struct {
		Broker *int32 `json:"broker"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return 0, fmt.Errorf("log dir event: %w", err)
	}
	if j.Broker == nil {
		return 0, fmt.Errorf("log dir event %s: no broker", data)
	}
	return *j.Broker, nil
}

// EncodeConfig writes an entity's overrides, /config/<type>/<name>:
// {"version":1,"config":{"key":"value"}}.
func EncodeConfig(config map[string]string) []byte {
	if config == nil {
		config = map[string]string{}
	}
	return marshal(map[string]any{"version": 1, "config": config})
}

// DecodeConfig reads an entity's overrides; an empty znode has none.
func DecodeConfig(data []byte) (map[string]string, error) {
	out := map[string]string{}
	if len(bytes.TrimSpace(data)) == 0 {
		return out, nil
	}
	var j struct {
		Config map[string]any `json:"config"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("config znode: %w", err)
	}
	for k, v := range j.Config {
		switch v := v.(type) {
		case string:
			out[k] = v
		case nil:
		default:
			// Values are strings when Kafka writes them; a hand-edited
			// number or boolean still means its text.
			b, _ := json.Marshal(v)
			out[k] = string(b)
		}
	}
	return out, nil
}

// EncodeConfigChange writes a /config/changes/config_change_<seq>
// notification for entityPath ("topics/<topic>", "brokers/<id>"):
// {"version":2,"entity_path":"..."}.
func EncodeConfigChange(entityPath string) []byte {
	return marshal(map[string]any{"version": 2, "entity_path": entityPath})
}

// DecodeConfigChange returns the entity path of a config change
// notification, from version 2 or the older version 1
// ({"entity_type":..,"entity_name":..}).
func DecodeConfigChange(data []byte) (string, error) {
	var j struct {
		Version    int    `json:"version"`
		EntityPath string `json:"entity_path"`
		EntityType string `json:"entity_type"`
		EntityName string `json:"entity_name"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return "", fmt.Errorf("config change notification: %w", err)
	}
	switch j.Version {
	case 1:
		if j.EntityType == "" || j.EntityName == "" {
			return "", fmt.Errorf("config change notification %s: no entity", data)
		}
		return j.EntityType + "/" + j.EntityName, nil
	case 2:
		if j.EntityPath == "" {
			return "", fmt.Errorf("config change notification %s: no entity_path", data)
		}
		return j.EntityPath, nil
	}
	return "", fmt.Errorf("config change notification %s: unsupported version %d", data, j.Version)
}
