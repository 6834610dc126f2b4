package hostile

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A stranger on the plaintext listener does not know the controller epoch, but it
// is a small number: every forged request below is sent at each of these, so the
// one the store holds is among them.
var guessedEpochs = []int32{0, 1, 2}

func createTopic(t *testing.T, b *broker, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	resp, err := b.Admin(t).CreateTopic(testCtx(t, 30*time.Second), partitions, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
}

func produce(t *testing.T, cl *kgo.Client, topic string, n int) {
	t.Helper()
	for i := range n {
		r := &kgo.Record{Topic: topic, Value: []byte{byte(i)}}
		if err := cl.ProduceSync(testCtx(t, 30*time.Second), r).FirstErr(); err != nil {
			t.Fatalf("producing to %s: %v", topic, err)
		}
	}
}

func consumeN(t *testing.T, b *broker, topic string, n int) {
	t.Helper()
	cl := b.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	ctx := testCtx(t, 30*time.Second)
	for got < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records of %s", got, n, topic)
		}
		fs.EachRecord(func(*kgo.Record) { got++ })
	}
}

// worksAfter checks the broker still creates topics (which needs its real
// controller's requests to be accepted) and serves them.
func worksAfter(t *testing.T, b *broker, topic, what string) {
	t.Helper()
	b.alive(t, what)
	createTopic(t, b, topic, 1, nil)
	produce(t, b.Client(t), topic, 3)
	consumeN(t, b, topic, 3)
}

func leaderAndIsr(epoch int32, topic string, p kmsg.LeaderAndISRRequestTopicPartition) *kmsg.LeaderAndISRRequest {
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.Version = 4
	req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = 0, epoch, -1
	ts := kmsg.NewLeaderAndISRRequestTopicState()
	ts.Topic = topic
	p.Topic = topic
	ts.PartitionStates = []kmsg.LeaderAndISRRequestTopicPartition{p}
	req.TopicStates = []kmsg.LeaderAndISRRequestTopicState{ts}
	lb := kmsg.NewLeaderAndISRRequestLiveLeader()
	lb.BrokerID, lb.Host, lb.Port = 0, "127.0.0.1", 1
	req.LiveLeaders = []kmsg.LeaderAndISRRequestLiveLeader{lb}
	return req
}

func partitionState(leader, leaderEpoch int32, replicas, isr []int32) kmsg.LeaderAndISRRequestTopicPartition {
	p := kmsg.NewLeaderAndISRRequestTopicPartition()
	p.Leader, p.LeaderEpoch, p.Replicas, p.ISR, p.IsNew = leader, leaderEpoch, replicas, isr, true
	return p
}

func stopReplica(epoch int32, topic string, del bool) *kmsg.StopReplicaRequest {
	req := kmsg.NewPtrStopReplicaRequest()
	req.Version = 3
	req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = 0, epoch, -1
	st := kmsg.NewStopReplicaRequestTopic()
	st.Topic = topic
	sp := kmsg.NewStopReplicaRequestTopicPartitionState()
	sp.Partition, sp.LeaderEpoch, sp.Delete = 0, -2, del
	st.PartitionStates = []kmsg.StopReplicaRequestTopicPartitionState{sp}
	req.Topics = []kmsg.StopReplicaRequestTopic{st}
	return req
}

// send delivers a forged request; the broker may answer with an error or close
// the connection, but it must not crash (checked by the callers).
func send(t *testing.T, b *broker, req kmsg.Request) kmsg.Response {
	t.Helper()
	resp, err := dialRaw(t, b.Addr()).request(req)
	if err != nil {
		return nil
	}
	return resp
}

// TestForgedControllerEpochFencesNobody: LeaderAndIsr, StopReplica and
// UpdateMetadata claiming controller epoch 1001 must not fence the real
// controller (epoch 1): topics created afterwards still get a leader.
func TestForgedControllerEpochFencesNobody(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "before", 1, nil)
	lair := leaderAndIsr(1001, "before", partitionState(0, 0, []int32{0}, []int32{0}))
	lair.TopicStates = nil
	um := kmsg.NewPtrUpdateMetadataRequest()
	um.Version, um.ControllerID, um.ControllerEpoch, um.BrokerEpoch = 6, 0, 1001, -1
	sr := stopReplica(1001, "before", false)
	sr.Topics = nil
	for _, req := range []kmsg.Request{lair, um, sr} {
		if resp := send(t, b, req); resp != nil {
			if code := errorCodeOf(resp); code == 0 {
				t.Errorf("%s with controller epoch 1001 was accepted", kmsg.NameForKey(req.Key()))
			}
		}
	}
	worksAfter(t, b, "after", "requests claiming controller epoch 1001")
}

func errorCodeOf(resp kmsg.Response) int16 {
	switch r := resp.(type) {
	case *kmsg.LeaderAndISRResponse:
		return r.ErrorCode
	case *kmsg.UpdateMetadataResponse:
		return r.ErrorCode
	case *kmsg.StopReplicaResponse:
		if r.ErrorCode != 0 {
			return r.ErrorCode
		}
		for _, p := range r.Partitions {
			if p.ErrorCode != 0 {
				return p.ErrorCode
			}
		}
	case *kmsg.ControlledShutdownResponse:
		return r.ErrorCode
	}
	return 0
}

// TestForgedUpdateMetadata: an UpdateMetadata that moves broker 0 to a fake
// address and leaves every topic out must neither redirect clients nor delete the
// committed offsets of a group on those topics.
func TestForgedUpdateMetadata(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "t", 1, nil)
	cl := b.Client(t)
	produce(t, cl, "t", 2)
	adm := kadm.NewClient(cl)
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "t", Partition: 0, At: 2, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(testCtx(t, 30*time.Second), "g", offsets); err != nil {
		t.Fatal(err)
	}
	for _, epoch := range guessedEpochs {
		um := kmsg.NewPtrUpdateMetadataRequest()
		um.Version, um.ControllerID, um.ControllerEpoch, um.BrokerEpoch = 6, 0, epoch, -1
		lb := kmsg.NewUpdateMetadataRequestLiveBroker()
		lb.ID, lb.Host, lb.Port = 0, "10.255.255.1", 9
		ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
		ep.Host, ep.Port, ep.ListenerName = lb.Host, lb.Port, "PLAINTEXT"
		lb.Endpoints = []kmsg.UpdateMetadataRequestLiveBrokerEndpoint{ep}
		um.LiveBrokers = []kmsg.UpdateMetadataRequestLiveBroker{lb}
		send(t, b, um)
	}
	// The right broker, but partition t-0 led by a broker that does not exist.
	for _, epoch := range guessedEpochs {
		um := kmsg.NewPtrUpdateMetadataRequest()
		um.Version, um.ControllerID, um.ControllerEpoch, um.BrokerEpoch = 6, 0, epoch, -1
		lb := kmsg.NewUpdateMetadataRequestLiveBroker()
		lb.ID = 0
		ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
		ep.Host, ep.Port, ep.ListenerName = "127.0.0.1", int32(b.Port()), "PLAINTEXT"
		lb.Endpoints = []kmsg.UpdateMetadataRequestLiveBrokerEndpoint{ep}
		um.LiveBrokers = []kmsg.UpdateMetadataRequestLiveBroker{lb}
		ts := kmsg.NewUpdateMetadataRequestTopicState()
		ts.Topic = "t"
		ps := kmsg.NewUpdateMetadataRequestTopicPartition()
		ps.Topic, ps.Partition, ps.Leader, ps.LeaderEpoch, ps.Replicas, ps.ISR = "t", 0, 5, 9, []int32{5}, []int32{5}
		ts.PartitionStates = []kmsg.UpdateMetadataRequestTopicPartition{ps}
		um.TopicStates = []kmsg.UpdateMetadataRequestTopicState{ts}
		send(t, b, um)
	}
	// The right broker, and t-0 marked deleted (leader -2) in an update.
	for _, epoch := range guessedEpochs {
		um := kmsg.NewPtrUpdateMetadataRequest()
		um.Version, um.ControllerID, um.ControllerEpoch, um.BrokerEpoch = 7, 0, epoch, -1
		ts := kmsg.NewUpdateMetadataRequestTopicState()
		ts.Topic = "t"
		ps := kmsg.NewUpdateMetadataRequestTopicPartition()
		ps.Topic, ps.Partition, ps.Leader, ps.LeaderEpoch = "t", 0, -2, -1
		ts.PartitionStates = []kmsg.UpdateMetadataRequestTopicPartition{ps}
		um.TopicStates = []kmsg.UpdateMetadataRequestTopicState{ts}
		send(t, b, um)
	}
	b.alive(t, "forged UpdateMetadata")
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 7
	resp, err := dialRaw(t, b.Addr()).request(md)
	if err != nil {
		t.Fatal(err)
	}
	m := resp.(*kmsg.MetadataResponse)
	for _, br := range m.Brokers {
		if br.NodeID == 0 && (br.Host != "127.0.0.1" || br.Port != int32(b.Port())) {
			t.Errorf("clients are sent to broker 0 at %s:%d", br.Host, br.Port)
		}
	}
	if len(m.Topics) == 0 {
		t.Error("the forged UpdateMetadata removed every topic from metadata")
	}
	for _, tp := range m.Topics {
		if tp.Topic != nil && *tp.Topic == "t" && len(tp.Partitions) != 1 {
			t.Errorf("topic t has %d partitions in metadata after a forged UpdateMetadata, want 1", len(tp.Partitions))
		}
	}
	for _, tp := range m.Topics {
		for _, p := range tp.Partitions {
			if tp.Topic != nil && *tp.Topic == "t" && (p.Leader != 0 || p.ErrorCode != 0) {
				t.Errorf("t-%d: leader %d, error %v after a forged UpdateMetadata", p.Partition, p.Leader, kerr.ErrorForCode(p.ErrorCode))
			}
		}
	}
	fetched, err := adm.FetchOffsets(testCtx(t, 30*time.Second), "g")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup("t", 0); !ok || o.At != 2 {
		t.Errorf("group g's committed offset on t is %+v (found %v), want 2", o, ok)
	}
	worksAfter(t, b, "after", "forged UpdateMetadata")
}

// TestPathEscape: LeaderAndIsr and StopReplica for topic "../x" must neither create
// nor delete anything outside log.dirs.
func TestPathEscape(t *testing.T) {
	b := startBroker(t)
	keep := filepath.Join(b.root, "x-0")
	if err := os.MkdirAll(keep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(keep, "keep"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := b.outside(t)
	for _, epoch := range guessedEpochs {
		for _, topic := range []string{"../x", "/tmp/ktool-hostile-abs"} {
			send(t, b, leaderAndIsr(epoch, topic, partitionState(0, 0, []int32{0}, []int32{0})))
			send(t, b, stopReplica(epoch, topic, true))
		}
	}
	b.alive(t, "LeaderAndIsr and StopReplica naming ../x")
	if after := b.outside(t); !slices.Equal(before, after) {
		t.Errorf("outside log.dirs: before %v, after %v", before, after)
	}
	if _, err := os.Stat("/tmp/ktool-hostile-abs-0"); err == nil {
		t.Error("an absolute topic name created /tmp/ktool-hostile-abs-0")
		_ = os.RemoveAll("/tmp/ktool-hostile-abs-0")
	}
	worksAfter(t, b, "after", "path escapes")
}

// TestFakeReplicaInISR: with min.insync.replicas=2 on a one-replica topic, acks=all
// must fail; a forged LeaderAndIsr adding replica 99 to the ISR, and follower
// fetches claiming to be replica 99, must not make it succeed.
func TestFakeReplicaInISR(t *testing.T) {
	b := startBroker(t)
	two := "2"
	createTopic(t, b, "acks", 1, map[string]*string{"min.insync.replicas": &two})
	for _, epoch := range guessedEpochs {
		for _, le := range []int32{0, 1, 5} {
			send(t, b, leaderAndIsr(epoch, "acks", partitionState(0, le, []int32{0, 99}, []int32{0, 99})))
		}
	}
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.ReplicaID, fetch.MaxWaitMillis, fetch.MaxBytes = 11, 99, 10, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "acks"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 0, 0, 1<<20, -1
	ft.Partitions = []kmsg.FetchRequestTopicPartition{fp}
	fetch.Topics = []kmsg.FetchRequestTopic{ft}
	// While the produce waits, "replica 99" keeps claiming it holds offset 0.
	fetch.Topics[0].Partitions[0].FetchOffset = 1
	stop := make(chan struct{})
	fetching := make(chan struct{})
	go func() {
		defer close(fetching)
		c, err := net.DialTimeout("tcp", b.Addr(), 10*time.Second)
		if err != nil {
			return
		}
		defer c.Close()
		rc := &raw{t: t, c: c, br: bufio.NewReader(c)}
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if _, err := rc.request(fetch); err != nil {
				return
			}
		}
	}()
	cl := b.Client(t, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(3*time.Second), kgo.DisableIdempotentWrite())
	r := &kgo.Record{Topic: "acks", Value: []byte("only one replica holds this")}
	err := cl.ProduceSync(testCtx(t, 30*time.Second), r).FirstErr()
	close(stop)
	<-fetching
	if err == nil {
		t.Fatal("acks=all was acknowledged with one real replica and min.insync.replicas=2")
	}
	t.Logf("acks=all: %v", err)
	// Sending a follower fetch as replica 99 must be refused outright.
	resp, err := dialRaw(t, b.Addr()).request(fetch)
	if err == nil {
		for _, tp := range resp.(*kmsg.FetchResponse).Topics {
			for _, p := range tp.Partitions {
				if p.ErrorCode == 0 {
					t.Errorf("a follower fetch as unassigned replica 99 was served")
				}
			}
		}
	}
	worksAfter(t, b, "after", "a fake replica")
}

// TestForgedStopReplicaKeepsData: StopReplica with delete for a live topic the
// store still assigns to the broker must not delete its log, and one without
// delete must not stop the broker leading it.
func TestForgedStopReplicaKeepsData(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "keep", 1, nil)
	produce(t, b.Client(t), "keep", 5)
	for _, epoch := range guessedEpochs {
		send(t, b, stopReplica(epoch, "keep", true))
		send(t, b, stopReplica(epoch, "keep", false)) // would leave keep-0 leaderless
	}
	if _, err := os.Stat(filepath.Join(b.dir, "keep-0")); err != nil {
		t.Fatalf("the log of keep-0 is gone: %v", err)
	}
	consumeN(t, b, "keep", 5)
	produce(t, b.Client(t), "keep", 1)
	worksAfter(t, b, "after", "forged StopReplica")
}

// TestForgedControlledShutdown: ControlledShutdown for broker 0 without its epoch
// (v1) or with a made-up one must be refused.
func TestForgedControlledShutdown(t *testing.T) {
	b := startBroker(t)
	for _, v := range []int16{1, 3} {
		req := kmsg.NewPtrControlledShutdownRequest()
		req.Version, req.BrokerID, req.BrokerEpoch = v, 0, 12345
		if resp := send(t, b, req); resp != nil && errorCodeOf(resp) != kerr.StaleBrokerEpoch.Code {
			t.Errorf("ControlledShutdown v%d with a made-up epoch: %v, want STALE_BROKER_EPOCH or no answer",
				v, kerr.ErrorForCode(errorCodeOf(resp)))
		}
	}
	worksAfter(t, b, "after", "forged ControlledShutdown")
}
