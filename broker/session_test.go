package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/broker/brokertest"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// TestSessionExpiry: a broker whose session expires re-registers with a new broker
// epoch and rejoins; a controller whose session expires stops being controller and
// an election runs with a higher epoch.
func TestSessionExpiry(t *testing.T) {
	c := brokertest.NewCluster(t, 3)
	adm := c.Admin()
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "s"); err != nil {
		t.Fatal(err)
	}
	_, ctrl, err := describeWait(t, adm, "s")
	if err != nil {
		t.Fatal(err)
	}
	epoch := controllerEpoch(t, c)
	oldSession := c.Broker(ctrl).Store().SessionID()
	c.ExpireSession(ctrl)
	brokertest.Eventually(t, 15*time.Second, func() error {
		b := c.Broker(ctrl)
		if b.Store().SessionID() == oldSession {
			return fmt.Errorf("broker %d still on the expired session", ctrl)
		}
		_, st, err := b.Store().Get(ctx, zkdata.BrokerPath(ctrl))
		if err != nil {
			return fmt.Errorf("broker %d not registered again: %v", ctrl, err)
		}
		if st.EphemeralOwner != b.Store().SessionID() {
			return fmt.Errorf("registration owned by session %x, not the new one", st.EphemeralOwner)
		}
		if e := controllerEpoch(t, c); e <= epoch {
			return fmt.Errorf("controller epoch %d did not move past %d", e, epoch)
		}
		md, err := adm.BrokerMetadata(ctx)
		if err != nil {
			return err
		}
		if len(md.Brokers) != 3 || md.Controller < 0 {
			return fmt.Errorf("metadata brokers %d controller %d", len(md.Brokers), md.Controller)
		}
		return nil
	})
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	for p := int32(0); p < 3; p++ {
		produceSync(t, cl, "s", p, "after-expiry")
	}
}

func describeWait(t *testing.T, a *kadm.Client, topic string) (map[int32]partitionView, int32, error) {
	t.Helper()
	var v map[int32]partitionView
	var ctrl int32
	brokertest.Eventually(t, 10*time.Second, func() error {
		var err error
		v, ctrl, err = describe(t, a, topic)
		if err != nil {
			return err
		}
		for p, pv := range v {
			if pv.Leader < 0 {
				return fmt.Errorf("partition %d has no leader", p)
			}
		}
		return nil
	})
	return v, ctrl, nil
}
