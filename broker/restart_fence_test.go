package broker_test

import (
	"context"
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
	ctrl, _, err := s.Get(ctx, zkdata.ControllerPath)
	if err != nil {
		t.Fatal(err)
	}
	ci, err := zkdata.DecodeController(ctrl)
	if err != nil {
		t.Fatal(err)
	}
	ce, _, err := s.Get(ctx, zkdata.ControllerEpochPath)
	if err != nil {
		t.Fatal(err)
	}
	epoch, err := zkdata.DecodeControllerEpoch(ce)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.Version = 4
	req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = ci.BrokerID, epoch, st.Czxid
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
