package broker_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/broker/brokertest"
)

// TestMinInsyncReplicas: acks=all is refused with NOT_ENOUGH_REPLICAS once the ISR
// is below min.insync.replicas, while acks=1 still works; it recovers when a
// replica returns.
func TestMinInsyncReplicas(t *testing.T) {
	c := brokertest.NewCluster(t, 3, brokertest.WithProps(map[string]string{"auto.leader.rebalance.enable": "false"}))
	adm := c.Admin()
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "m"); err != nil {
		t.Fatal(err)
	}
	v, _, _ := describeWait(t, adm, "m")
	leader := v[0].Leader
	var others []int32
	for _, r := range v[0].Replicas {
		if r != leader {
			others = append(others, r)
		}
	}
	for _, id := range others {
		c.Kill(id)
	}
	brokertest.Eventually(t, 15*time.Second, func() error {
		v, _, err := describe(t, adm, "m")
		if err != nil {
			return err
		}
		if len(v[0].ISR) != 1 {
			return fmt.Errorf("ISR %v has not shrunk to the leader", v[0].ISR)
		}
		return nil
	})
	all := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1), kgo.RecordDeliveryTimeout(3*time.Second))
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := all.ProduceSync(pctx, &kgo.Record{Topic: "m", Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("acks=all with ISR below min.insync.replicas: got %v, want NOT_ENOUGH_REPLICAS", err)
	}
	one := c.Client(kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err := one.ProduceSync(ctx, &kgo.Record{Topic: "m", Value: []byte("y")}).FirstErr(); err != nil {
		t.Fatalf("acks=1 must still work: %v", err)
	}
	c.Restart(others[0])
	brokertest.Eventually(t, 20*time.Second, func() error {
		v, _, err := describe(t, adm, "m")
		if err != nil {
			return err
		}
		if !slices.Contains(v[0].ISR, others[0]) {
			return fmt.Errorf("broker %d not back in ISR %v", others[0], v[0].ISR)
		}
		return nil
	})
	all2 := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()))
	if err := all2.ProduceSync(ctx, &kgo.Record{Topic: "m", Value: []byte("z")}).FirstErr(); err != nil {
		t.Fatalf("acks=all after the ISR grew back: %v", err)
	}
}

// TestUncleanLeaderElection: with every ISR member down, the partition stays
// offline unless unclean election is enabled for the topic, and then an
// out-of-sync replica leads.
func TestUncleanLeaderElection(t *testing.T) {
	c := brokertest.NewCluster(t, 2, brokertest.WithProps(map[string]string{"auto.leader.rebalance.enable": "false"}))
	adm := c.Admin()
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 1, 2, nil, "u"); err != nil {
		t.Fatal(err)
	}
	v, _, _ := describeWait(t, adm, "u")
	leader := v[0].Leader
	follower := v[0].Replicas[0]
	if follower == leader {
		follower = v[0].Replicas[1]
	}
	// The follower dies first and leaves the ISR; then the leader dies.
	c.Kill(follower)
	brokertest.Eventually(t, 15*time.Second, func() error {
		v, _, err := describe(t, adm, "u")
		if err != nil {
			return err
		}
		if slices.Contains(v[0].ISR, follower) {
			return fmt.Errorf("follower still in ISR %v", v[0].ISR)
		}
		return nil
	})
	c.Kill(leader)
	c.Restart(follower)
	adm = c.Admin()
	brokertest.Eventually(t, 10*time.Second, func() error {
		v, _, err := describe(t, adm, "u")
		if err != nil {
			return err
		}
		if v[0].Leader != -1 {
			return fmt.Errorf("out-of-sync replica %d leads without unclean election", v[0].Leader)
		}
		return nil
	})
	res, err := adm.ElectLeaders(ctx, kadm.ElectLiveReplica, kadm.TopicsSet{"u": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := res["u"][0]; r.Err != nil {
		t.Fatalf("unclean election: %v", r.Err)
	}
	brokertest.Eventually(t, 10*time.Second, func() error {
		v, _, err := describe(t, adm, "u")
		if err != nil {
			return err
		}
		if v[0].Leader != follower {
			return fmt.Errorf("leader %d, want %d after unclean election", v[0].Leader, follower)
		}
		return nil
	})
}
