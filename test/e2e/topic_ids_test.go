package e2e

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// createTopicsV7 sends CreateTopics v7 for one topic with an explicit assignment
// (partition count and replication factor -1), waiting up to 5 s.
func createTopicsV7(t testing.TB, rc *rawConn, topic string, assignment map[int32][]int32) kmsg.CreateTopicsResponseTopic {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	req.TimeoutMillis = 5000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = topic
	rt.NumPartitions, rt.ReplicationFactor = -1, -1
	for p, replicas := range assignment {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = p, replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := rc.Request(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.CreateTopicsResponse).Topics[0]
}

func deleteTopicByID(t testing.TB, rc *rawConn, id [16]byte) int16 {
	t.Helper()
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version = 6
	del.TimeoutMillis = 30000
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.TopicID = id
	del.Topics = append(del.Topics, dt)
	resp, err := rc.Request(del)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode
}

// TestCreateTopicsReplicaAssignment: an explicit assignment is honoured; one that
// skips a partition or repeats a broker is refused, as is an assignment together
// with a partition count. (An unknown broker in a CreateTopics assignment is not
// checked in Kafka's ZooKeeper mode either; CreatePartitions does check it.)
func TestCreateTopicsReplicaAssignment(t *testing.T) {
	b := startBroker(t)
	rc := dialRaw(t, b.Addr())
	if r := createTopicsV7(t, rc, "assigned", map[int32][]int32{0: {0}, 1: {0}}); r.ErrorCode != 0 {
		t.Fatalf("create with an explicit assignment: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	eventually(t, 30*time.Second, func() error {
		return topicReady(metadataFor(t, rc, 9, false, "assigned"), "assigned", 2)
	})
	if r := createTopicsV7(t, rc, "gap-assignment", map[int32][]int32{0: {0}, 2: {0}}); r.ErrorCode != kerr.InvalidReplicaAssignment.Code {
		t.Errorf("assignment skipping partition 1: %v, want INVALID_REPLICA_ASSIGNMENT", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := createTopicsV7(t, rc, "twice-assignment", map[int32][]int32{0: {0, 0}}); r.ErrorCode != kerr.InvalidReplicaAssignment.Code {
		t.Errorf("assignment naming broker 0 twice: %v, want INVALID_REPLICA_ASSIGNMENT", kerr.ErrorForCode(r.ErrorCode))
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	req.TimeoutMillis = 5000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "both", 2, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{0}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	req.Topics = append(req.Topics, rt)
	resp, err := rc.Request(req)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != kerr.InvalidRequest.Code {
		t.Errorf("partition count and an assignment together: %v, want INVALID_REQUEST", kerr.ErrorForCode(code))
	}

	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.Version = 1
	cp.TimeoutMillis = 5000
	ct := kmsg.NewCreatePartitionsRequestTopic()
	ct.Topic, ct.Count = "assigned", 3
	ca := kmsg.NewCreatePartitionsRequestTopicAssignment()
	ca.Replicas = []int32{5}
	ct.Assignment = append(ct.Assignment, ca)
	cp.Topics = append(cp.Topics, ct)
	cresp, err := rc.Request(cp)
	if err != nil {
		t.Fatal(err)
	}
	if code := cresp.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode; code != kerr.InvalidReplicaAssignment.Code {
		t.Errorf("new partition assigned to broker 5: %v, want INVALID_REPLICA_ASSIGNMENT", kerr.ErrorForCode(code))
	}
	if m := metadataFor(t, rc, 9, false, "assigned"); topicReady(m, "assigned", 2) != nil {
		t.Errorf("refused CreatePartitions changed the topic: %v", topicReady(m, "assigned", 2))
	}
}

// TestTopicIDs: a DeleteTopics v6 entry with neither name nor id must not delete
// anything. Topic ids (KIP-516) are optional for a ZooKeeper-mode broker (the
// /brokers/topics JSON of version 2 has none, and clients take the zero id as
// unknown); whatever id the broker reports must agree between CreateTopics and
// Metadata and stay across a restart, and a non-zero one deletes the topic.
func TestTopicIDs(t *testing.T) {
	b := startBroker(t)
	adm := b.Admin(t)
	createTopic(t, adm, "keep-1", 1, nil)
	createTopic(t, adm, "keep-2", 1, nil)
	rc := dialRaw(t, b.Addr())
	if code := deleteTopicByID(t, rc, [16]byte{}); code == 0 {
		t.Errorf("DeleteTopics v6 with a zero id and no name succeeded")
	}
	td, err := adm.ListTopics(testCtx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !td.Has("keep-1") || !td.Has("keep-2") {
		t.Errorf("a DeleteTopics with a zero id deleted a topic: left %v", td.Names())
	}

	r := createTopicsV7(t, rc, "with-id", map[int32][]int32{0: {0}})
	if r.ErrorCode != 0 {
		t.Fatalf("CreateTopics v7: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	eventually(t, 30*time.Second, func() error {
		return topicReady(metadataFor(t, rc, 11, false, "with-id"), "with-id", 1)
	})
	id := metadataFor(t, rc, 11, false, "with-id").Topics[0].TopicID
	if id != r.TopicID {
		t.Fatalf("Metadata says topic id %x, CreateTopics said %x", id, r.TopicID)
	}
	b.Stop(t)
	b.Restart(t)
	rc = dialRaw(t, b.Addr())
	if got := metadataFor(t, rc, 11, false, "with-id").Topics[0].TopicID; got != id {
		t.Fatalf("topic id %x after restart, was %x", got, id)
	}
	if id == ([16]byte{}) {
		return
	}
	if code := deleteTopicByID(t, rc, id); code != 0 {
		t.Fatalf("DeleteTopics v6 by id: %v", kerr.ErrorForCode(code))
	}
	if td, err := adm.ListTopics(testCtx(t, 10*time.Second)); err != nil || td.Has("with-id") {
		t.Fatalf("topic deleted by id is still listed (%v)", err)
	}
	if code := deleteTopicByID(t, rc, id); code != kerr.UnknownTopicID.Code {
		t.Errorf("deleting an unknown id: %v, want UNKNOWN_TOPIC_ID", kerr.ErrorForCode(code))
	}
}
