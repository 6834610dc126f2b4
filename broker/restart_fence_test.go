package broker_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/brokertest"
	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// TestRestartedBrokerIgnoresItsPredecessorsRequests: a broker restarted while
// its killed predecessor's session still holds /brokers/ids/N listens before
// it can register. A controller request carrying that registration's epoch is
// for the dead process and must be refused (STALE_BROKER_EPOCH): acting on it
// made the new process lead partitions and serve stale metadata before it
// existed for the controller, and librdkafka's producer then stuck to a
// non-leader (TestKcatRollingKill).
func TestRestartedBrokerIgnoresItsPredecessorsRequests(t *testing.T) {
	c := brokertest.NewCluster(t, 2)
	ctx := context.Background()
	if _, err := c.Admin().CreateTopic(ctx, 1, 2, nil, "fence"); err != nil {
		t.Fatal(err)
	}
	addr := c.Broker(1).Addr()
	s := c.Broker(0).Store()
	reg, _, err := s.Get(ctx, zkdata.BrokerPath(1))
	if err != nil {
		t.Fatal(err)
	}
	c.Kill(1)
	// The predecessor's registration, still alive (here held by another
	// session, as a killed broker's is until its session expires).
	brokertest.Eventually(t, 10*time.Second, func() error {
		_, err := s.Create(ctx, zkdata.BrokerPath(1), reg, coord.Ephemeral)
		return err
	})
	_, st, err := s.Get(ctx, zkdata.BrokerPath(1))
	if err != nil {
		t.Fatal(err)
	}
	restarted := make(chan struct{})
	go func() {
		defer close(restarted)
		c.Restart(1) // waits for the predecessor's registration to go
	}()
	brokertest.Eventually(t, 20*time.Second, func() error {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
		}
		return err
	})
	ctrlID, epoch := controllerIn(t, s)
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.Version = 4
	req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = ctrlID, epoch, st.Czxid
	cl := &protocol.Client{Addr: addr}
	defer cl.Close()
	resp, err := cl.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.LeaderAndISRResponse).ErrorCode; code != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("LeaderAndIsr for the predecessor's registration before registering: %v, want STALE_BROKER_EPOCH", kerr.ErrorForCode(code))
	}
	if err := s.Delete(ctx, zkdata.BrokerPath(1), coord.AnyVersion); err != nil {
		t.Fatal(err)
	}
	select {
	case <-restarted:
	case <-time.After(30 * time.Second):
		t.Fatal("broker 1 did not register after its predecessor's registration went")
	}
}

// TestStaleUpdateMetadataTakesTheStoresState: an UpdateMetadata from the
// controller naming a partition state older than the store's (queued before an
// election it then wrote) is applied with the store's state in its place, not
// refused: refused, a restarted broker never got the controller's full view
// and answered Metadata with part of a topic's partitions.
func TestStaleUpdateMetadataTakesTheStoresState(t *testing.T) {
	c := brokertest.NewCluster(t, 2)
	ctx := context.Background()
	if _, err := c.Admin().CreateTopic(ctx, 2, 2, nil, "stale"); err != nil {
		t.Fatal(err)
	}
	s := c.Broker(0).Store()
	var li zkdata.LeaderIsr
	brokertest.Eventually(t, 10*time.Second, func() error {
		data, st, err := s.Get(ctx, zkdata.PartitionStatePath("stale", 0))
		if err != nil {
			return err
		}
		li, err = zkdata.DecodeLeaderIsr(data, st.Version)
		return err
	})
	other := int32(1 - li.Leader)
	um := controllerUpdateMetadata(t, c, other)
	ts := kmsg.NewUpdateMetadataRequestTopicState()
	ts.Topic = "stale"
	ps := kmsg.NewUpdateMetadataRequestTopicPartition()
	// Led by the other broker at an epoch before the store's.
	ps.Topic, ps.Partition, ps.Leader, ps.LeaderEpoch, ps.Replicas, ps.ISR = "stale", 0, other, li.LeaderEpoch-1, []int32{0, 1}, []int32{other}
	ts.PartitionStates = []kmsg.UpdateMetadataRequestTopicPartition{ps}
	um.TopicStates = []kmsg.UpdateMetadataRequestTopicState{ts}
	cl := &protocol.Client{Addr: c.Broker(other).Addr()}
	defer cl.Close()
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 9
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("stale")
	md.Topics = append(md.Topics, mt)
	// The controller's own view first: the request below is an update to it.
	brokertest.Eventually(t, 10*time.Second, func() error {
		mr, err := cl.Request(ctx, md)
		if err != nil {
			return err
		}
		if ts := mr.(*kmsg.MetadataResponse).Topics; len(ts) != 1 || len(ts[0].Partitions) != 2 {
			return fmt.Errorf("broker %d does not list both partitions yet: %+v", other, ts)
		}
		return nil
	})
	resp, err := cl.Request(ctx, um)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.UpdateMetadataResponse).ErrorCode; code != 0 {
		t.Fatalf("a stale UpdateMetadata from the controller: %v", kerr.ErrorForCode(code))
	}
	mr, err := cl.Request(ctx, md)
	if err != nil {
		t.Fatal(err)
	}
	m := mr.(*kmsg.MetadataResponse)
	if len(m.Topics) != 1 || len(m.Topics[0].Partitions) != 2 {
		t.Fatalf("metadata of stale after the update: %+v", m.Topics)
	}
	for _, p := range m.Topics[0].Partitions {
		if p.Partition == 0 && (p.Leader != li.Leader || p.LeaderEpoch != li.LeaderEpoch) {
			t.Fatalf("stale-0 led by %d at epoch %d, the store has %d at %d", p.Leader, p.LeaderEpoch, li.Leader, li.LeaderEpoch)
		}
	}
}

// controllerUpdateMetadata is an UpdateMetadata from the store's controller
// to broker to, naming both brokers of c live, with no partitions yet.
func controllerUpdateMetadata(t *testing.T, c *brokertest.Cluster, to int32) *kmsg.UpdateMetadataRequest {
	t.Helper()
	s := c.Broker(0).Store()
	ctrlID, epoch := controllerIn(t, s)
	_, reg, err := s.Get(context.Background(), zkdata.BrokerPath(to))
	if err != nil {
		t.Fatal(err)
	}
	um := kmsg.NewPtrUpdateMetadataRequest()
	um.Version, um.ControllerID, um.ControllerEpoch, um.BrokerEpoch = 7, ctrlID, epoch, reg.Czxid
	for _, id := range []int32{0, 1} {
		host, port, err := net.SplitHostPort(c.Broker(id).Addr())
		if err != nil {
			t.Fatal(err)
		}
		var p int
		if _, err := fmt.Sscan(port, &p); err != nil {
			t.Fatal(err)
		}
		lb := kmsg.NewUpdateMetadataRequestLiveBroker()
		lb.ID = id
		ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
		ep.Host, ep.Port, ep.ListenerName = host, int32(p), "PLAINTEXT"
		lb.Endpoints = []kmsg.UpdateMetadataRequestLiveBrokerEndpoint{ep}
		um.LiveBrokers = append(um.LiveBrokers, lb)
	}
	return um
}

// TestUpdateMetadataOfHostedPartition: an UpdateMetadata naming the leader
// and epoch a broker hosts a partition at (from a checked LeaderAndIsr) is
// taken without a store read; one naming another leader at that epoch is
// still refused, however the broker hosts it.
func TestUpdateMetadataOfHostedPartition(t *testing.T) {
	c := brokertest.NewCluster(t, 2, brokertest.WithProps(map[string]string{"auto.leader.rebalance.enable": "false"}))
	ctx := context.Background()
	if _, err := c.Admin().CreateTopic(ctx, 1, 2, nil, "hosted"); err != nil {
		t.Fatal(err)
	}
	s := c.Broker(0).Store()
	var li zkdata.LeaderIsr
	brokertest.Eventually(t, 10*time.Second, func() error {
		data, st, err := s.Get(ctx, zkdata.PartitionStatePath("hosted", 0))
		if err != nil {
			return err
		}
		li, err = zkdata.DecodeLeaderIsr(data, st.Version)
		return err
	})
	follower := int32(1 - li.Leader)
	brokertest.Eventually(t, 10*time.Second, func() error {
		l, e, ok := c.Broker(follower).HostedLeaderAndEpoch("hosted", 0)
		if !ok {
			return fmt.Errorf("broker %d does not host hosted-0 yet", follower)
		}
		if l != li.Leader || e != li.LeaderEpoch {
			return fmt.Errorf("hosted-0 at leader %d epoch %d, the store has %d at %d", l, e, li.Leader, li.LeaderEpoch)
		}
		return nil
	})
	cl := &protocol.Client{Addr: c.Broker(follower).Addr()}
	defer cl.Close()
	send := func(leader int32) int16 {
		um := controllerUpdateMetadata(t, c, follower)
		ts := kmsg.NewUpdateMetadataRequestTopicState()
		ts.Topic = "hosted"
		ps := kmsg.NewUpdateMetadataRequestTopicPartition()
		ps.Topic, ps.Partition, ps.Leader, ps.LeaderEpoch, ps.Replicas, ps.ISR = "hosted", 0, leader, li.LeaderEpoch, []int32{0, 1}, []int32{leader}
		ts.PartitionStates = []kmsg.UpdateMetadataRequestTopicPartition{ps}
		um.TopicStates = []kmsg.UpdateMetadataRequestTopicState{ts}
		resp, err := cl.Request(ctx, um)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.UpdateMetadataResponse).ErrorCode
	}
	if code := send(follower); code == 0 {
		t.Fatalf("an UpdateMetadata making broker %d leader at epoch %d, which the store gives broker %d, was taken", follower, li.LeaderEpoch, li.Leader)
	}
	if code := send(li.Leader); code != 0 {
		t.Fatalf("the hosted state: %v", kerr.ErrorForCode(code))
	}
}

// controllerIn reads the controller's id and epoch from the store, as a
// broker checks a controller request against them.
func controllerIn(t *testing.T, s coord.Store) (id, epoch int32) {
	t.Helper()
	ctx := context.Background()
	data, _, err := s.Get(ctx, zkdata.ControllerPath)
	if err != nil {
		t.Fatal(err)
	}
	ci, err := zkdata.DecodeController(data)
	if err != nil {
		t.Fatal(err)
	}
	data, _, err = s.Get(ctx, zkdata.ControllerEpochPath)
	if err != nil {
		t.Fatal(err)
	}
	epoch, err = zkdata.DecodeControllerEpoch(data)
	if err != nil {
		t.Fatal(err)
	}
	return ci.BrokerID, epoch
}
