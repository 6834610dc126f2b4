package broker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ktoolhq/ktool/broker/brokertest"
	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// unbalance kills and restarts the preferred leader of partition 0 so that
// another replica leads it, and returns that preferred leader.
func unbalance(t *testing.T, c *brokertest.Cluster, adm *kadm.Client, topic string) int32 {
	t.Helper()
	v, _, _ := describeWait(t, adm, topic)
	pref := v[0].Replicas[0]
	c.Kill(pref)
	c.Restart(pref)
	brokertest.Eventually(t, 20*time.Second, func() error {
		v, _, err := describe(t, adm, topic)
		if err != nil {
			return err
		}
		if v[0].Leader == pref {
			return errors.New("partition 0 is led by its preferred replica again too early")
		}
		for _, r := range v[0].Replicas {
			found := false
			for _, i := range v[0].ISR {
				found = found || i == r
			}
			if !found {
				return fmt.Errorf("replica %d not back in the ISR %v", r, v[0].ISR)
			}
		}
		return nil
	})
	return pref
}

func waitPreferred(t *testing.T, adm *kadm.Client, topic string, timeout time.Duration) {
	t.Helper()
	brokertest.Eventually(t, timeout, func() error {
		v, _, err := describe(t, adm, topic)
		if err != nil {
			return err
		}
		for p, pv := range v {
			if pv.Leader != pv.Replicas[0] {
				return fmt.Errorf("partition %d led by %d, preferred %d", p, pv.Leader, pv.Replicas[0])
			}
		}
		return nil
	})
}

// TestPreferredElectionThroughZnode: writing /admin/preferred_replica_election (as
// Kafka's old tools do) moves leadership back; the controller deletes the znode.
func TestPreferredElectionThroughZnode(t *testing.T) {
	for _, store := range brokertest.Stores {
		t.Run(string(store), func(t *testing.T) {
			c := brokertest.NewCluster(t, 3, brokertest.WithStore(store), brokertest.WithProps(map[string]string{"auto.leader.rebalance.enable": "false"}))
			adm := c.Admin()
			ctx := context.Background()
			if _, err := adm.CreateTopic(ctx, 3, 3, nil, "pz"); err != nil {
				t.Fatal(err)
			}
			unbalance(t, c, adm, "pz")
			adm = c.Admin()
			s := c.Broker(c.IDs()[0]).Store()
			data := zkdata.EncodePreferredReplicaElection([]zkdata.TopicPartition{{Topic: "pz", Partition: 0}})
			if _, err := s.Create(ctx, zkdata.PreferredReplicaElectionPath, data, coord.Persistent); err != nil {
				t.Fatal(err)
			}
			waitPreferred(t, adm, "pz", 10*time.Second)
			brokertest.Eventually(t, 10*time.Second, func() error {
				ok, _, err := s.Exists(ctx, zkdata.PreferredReplicaElectionPath)
				if err != nil || ok {
					return fmt.Errorf("znode still there (%v)", err)
				}
				return nil
			})
		})
	}
}

// TestAutoLeaderRebalance: with auto.leader.rebalance.enable the controller
// restores preferred leaders by itself once a broker's imbalance is above
// leader.imbalance.per.broker.percentage.
func TestAutoLeaderRebalance(t *testing.T) {
	c := brokertest.NewCluster(t, 3, brokertest.WithProps(map[string]string{
		"auto.leader.rebalance.enable":            "true",
		"leader.imbalance.check.interval.seconds": "1",
		"leader.imbalance.per.broker.percentage":  "10",
	}))
	adm := c.Admin()
	if _, err := adm.CreateTopic(context.Background(), 3, 3, nil, "ar"); err != nil {
		t.Fatal(err)
	}
	unbalanceWithoutWaiting(t, c, adm, "ar")
	waitPreferred(t, c.Admin(), "ar", 20*time.Second)
}

// unbalanceWithoutWaiting moves partition 0's leadership away (the rebalance
// may move it back at any moment, so nothing is asserted in between).
func unbalanceWithoutWaiting(t *testing.T, c *brokertest.Cluster, adm *kadm.Client, topic string) {
	t.Helper()
	v, _, _ := describeWait(t, adm, topic)
	pref := v[0].Replicas[0]
	c.Kill(pref)
	brokertest.Eventually(t, 15*time.Second, func() error {
		v, _, err := describe(t, adm, topic)
		if err != nil {
			return err
		}
		if v[0].Leader == pref || v[0].Leader < 0 {
			return fmt.Errorf("leader %d", v[0].Leader)
		}
		return nil
	})
	c.Restart(pref)
}
