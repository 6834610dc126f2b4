package broker_test

import (
	"context"
	"crypto/rand"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/brokertest"
	"github.com/ktoolhq/ktool/broker/controller"
	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// TestControllerToken: the controller's own requests carry its epoch's token
// and cost the brokers no partition state read; a LeaderAndIsr or StopReplica
// at the right controller id, controller epoch and broker epoch, but without
// the token or with another, is checked against the store as before and
// refused when it lies; with the token it is believed without a read.
func TestControllerToken(t *testing.T) {
	for _, store := range brokertest.Stores {
		t.Run(string(store), func(t *testing.T) { testControllerToken(t, store) })
	}
}

func testControllerToken(t *testing.T, store brokertest.Store) {
	c := brokertest.NewCluster(t, 2, brokertest.WithStore(store),
		brokertest.WithProps(map[string]string{"auto.leader.rebalance.enable": "false"}))
	ctx := context.Background()
	if _, err := c.Admin().CreateTopic(ctx, 8, 2, nil, "tok"); err != nil {
		t.Fatal(err)
	}
	s := c.Broker(0).Store()
	var li zkdata.LeaderIsr
	brokertest.Eventually(t, 20*time.Second, func() error {
		data, st, err := s.Get(ctx, zkdata.PartitionStatePath("tok", 0))
		if err != nil {
			return err
		}
		li, err = zkdata.DecodeLeaderIsr(data, st.Version)
		return err
	})
	follower := 1 - li.Leader
	fb := c.Broker(follower)
	brokertest.Eventually(t, 20*time.Second, func() error {
		if _, e, ok := fb.HostedLeaderAndEpoch("tok", 7); !ok || e < 0 {
			return kerr.LeaderNotAvailable
		}
		return nil
	})
	for _, id := range []int32{0, 1} {
		if n := c.Broker(id).ControllerCheckReads(); n != 0 {
			t.Errorf("broker %d made %d partition reads to check the controller's own requests, want 0", id, n)
		}
	}
	data, _, err := s.Get(ctx, zkdata.ControllerTokenPath)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := zkdata.DecodeControllerToken(data)
	if err != nil {
		t.Fatal(err)
	}
	ctrlID, epoch := controllerIn(t, s)
	if tok.Epoch != epoch {
		t.Fatalf("token of controller epoch %d, the store's epoch is %d", tok.Epoch, epoch)
	}
	_, reg, err := s.Get(ctx, zkdata.BrokerPath(follower))
	if err != nil {
		t.Fatal(err)
	}
	cl := &protocol.Client{Addr: fb.Addr()}
	defer cl.Close()

	lair := func(leader int32, token []byte) *kmsg.LeaderAndISRRequest {
		req := kmsg.NewPtrLeaderAndISRRequest()
		req.Version = 4
		req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = ctrlID, epoch, reg.Czxid
		ts := kmsg.NewLeaderAndISRRequestTopicState()
		ts.Topic = "tok"
		p := kmsg.NewLeaderAndISRRequestTopicPartition()
		p.Topic, p.Partition, p.ControllerEpoch = "tok", 0, li.ControllerEpoch
		p.Leader, p.LeaderEpoch, p.ISR, p.ZKVersion, p.Replicas = leader, li.LeaderEpoch, li.ISR, li.ZkVersion, []int32{0, 1}
		ts.PartitionStates = []kmsg.LeaderAndISRRequestTopicPartition{p}
		req.TopicStates = []kmsg.LeaderAndISRRequestTopicState{ts}
		for _, id := range []int32{0, 1} {
			host, port, err := net.SplitHostPort(c.Broker(id).Addr())
			if err != nil {
				t.Fatal(err)
			}
			n, err := strconv.Atoi(port)
			if err != nil {
				t.Fatal(err)
			}
			l := kmsg.NewLeaderAndISRRequestLiveLeader()
			l.BrokerID, l.Host, l.Port = id, host, int32(n)
			req.LiveLeaders = append(req.LiveLeaders, l)
		}
		if token != nil {
			req.UnknownTags.Set(controller.TokenTag, token)
		}
		return req
	}
	partitionCode := func(resp kmsg.Response) int16 {
		t.Helper()
		r := resp.(*kmsg.LeaderAndISRResponse)
		if r.ErrorCode != 0 {
			return r.ErrorCode
		}
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			return r.Topics[0].Partitions[0].ErrorCode
		}
		if len(r.Partitions) == 1 {
			return r.Partitions[0].ErrorCode
		}
		t.Fatalf("LeaderAndIsr answer without the partition: %+v", r)
		return 0
	}
	wrong := make([]byte, zkdata.ControllerTokenBytes)
	if _, err := rand.Read(wrong); err != nil {
		t.Fatal(err)
	}
	// The follower told it leads tok-0 at the leader's epoch: a lie.
	for _, forged := range []struct {
		name  string
		token []byte
	}{
		{"no token", nil},
		{"wrong token", wrong},
		{"token too long", append(append([]byte{}, tok.Token...), 0)},
		{"token too short", tok.Token[:zkdata.ControllerTokenBytes-1]},
	} {
		before := fb.ControllerCheckReads()
		resp, err := cl.Request(ctx, lair(follower, forged.token))
		if err != nil {
			t.Fatal(err)
		}
		if code := partitionCode(resp); code != kerr.InvalidRequest.Code {
			t.Errorf("%s: forged LeaderAndIsr answered %v, want INVALID_REQUEST", forged.name, kerr.ErrorForCode(code))
		}
		if l, e, _ := fb.HostedLeaderAndEpoch("tok", 0); l != li.Leader || e != li.LeaderEpoch {
			t.Fatalf("%s: broker %d hosts tok-0 led by %d at epoch %d after a forged LeaderAndIsr, want %d at %d",
				forged.name, follower, l, e, li.Leader, li.LeaderEpoch)
		}
		if n := fb.ControllerCheckReads() - before; n != 1 {
			t.Errorf("%s: %d partition reads, want 1", forged.name, n)
		}
	}
	// The store's own state, with the token: believed without a read.
	before := fb.ControllerCheckReads()
	resp, err := cl.Request(ctx, lair(li.Leader, tok.Token))
	if err != nil {
		t.Fatal(err)
	}
	if code := partitionCode(resp); code != 0 {
		t.Errorf("LeaderAndIsr with the token: %v", kerr.ErrorForCode(code))
	}
	if n := fb.ControllerCheckReads() - before; n != 0 {
		t.Errorf("LeaderAndIsr with the token made %d partition reads, want 0", n)
	}
	// A forged StopReplica deleting a live partition, without the token.
	sr := kmsg.NewPtrStopReplicaRequest()
	sr.Version = 3
	sr.ControllerID, sr.ControllerEpoch, sr.BrokerEpoch = ctrlID, epoch, reg.Czxid
	st := kmsg.NewStopReplicaRequestTopic()
	st.Topic = "tok"
	sp := kmsg.NewStopReplicaRequestTopicPartitionState()
	sp.Partition, sp.LeaderEpoch, sp.Delete = 1, -2, true
	st.PartitionStates = []kmsg.StopReplicaRequestTopicPartitionState{sp}
	sr.Topics = []kmsg.StopReplicaRequestTopic{st}
	sr.UnknownTags.Set(controller.TokenTag, wrong)
	resp, err = cl.Request(ctx, sr)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.(*kmsg.StopReplicaResponse); r.ErrorCode != 0 || len(r.Partitions) != 1 || r.Partitions[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("forged StopReplica with a wrong token: %+v, want INVALID_REQUEST for tok-1", r)
	}
	if _, _, ok := fb.HostedLeaderAndEpoch("tok", 1); !ok {
		t.Fatalf("broker %d no longer hosts tok-1 after a forged StopReplica", follower)
	}
}
