package broker_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/broker/brokertest"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// partitionView is one partition as Metadata reports it.
type partitionView struct {
	Leader, Epoch int32
	Replicas, ISR []int32
}

func describe(t *testing.T, adm *kadm.Client, topic string) (map[int32]partitionView, int32, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return nil, 0, err
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		return nil, 0, fmt.Errorf("topic %s: %v", topic, td.Err)
	}
	out := map[int32]partitionView{}
	for p, pd := range td.Partitions {
		isr := slices.Clone(pd.ISR)
		slices.Sort(isr)
		out[p] = partitionView{Leader: pd.Leader, Epoch: pd.LeaderEpoch, Replicas: pd.Replicas, ISR: isr}
	}
	return out, md.Controller, nil
}

func sorted(xs []int32) []int32 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s
}

func produceSync(t *testing.T, cl *kgo.Client, topic string, p int32, v string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	r := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)})
	rec, err := r.First()
	if err != nil {
		t.Fatalf("produce to %s/%d: %v", topic, p, err)
	}
	return rec.Offset
}

// TestSeedExperiments replays section 1 of the design walk-through on both stores:
// leaders spread over brokers with AR = ISR, killing a leader's broker, ISR/OSR,
// rejoining, preferred election, controller failover and an offline partition.
func TestSeedExperiments(t *testing.T) {
	for _, store := range brokertest.Stores {
		t.Run(string(store), func(t *testing.T) {
			c := brokertest.NewCluster(t, 3, brokertest.WithStore(store), brokertest.WithProps(map[string]string{
				"auto.leader.rebalance.enable": "false",
				"min.insync.replicas":          "2",
			}))
			adm := c.Admin()
			ctx := context.Background()
			if _, err := adm.CreateTopic(ctx, 3, 3, nil, "test"); err != nil {
				t.Fatal(err)
			}
			var view map[int32]partitionView
			brokertest.Eventually(t, 10*time.Second, func() error {
				v, _, err := describe(t, adm, "test")
				if err != nil {
					return err
				}
				leaders := map[int32]bool{}
				for p, pv := range v {
					if !slices.Equal(sorted(pv.Replicas), sorted(pv.ISR)) {
						return fmt.Errorf("partition %d: AR %v != ISR %v", p, pv.Replicas, pv.ISR)
					}
					if pv.Leader != pv.Replicas[0] {
						return fmt.Errorf("partition %d: leader %d is not the preferred replica %d", p, pv.Leader, pv.Replicas[0])
					}
					leaders[pv.Leader] = true
				}
				if len(v) != 3 || len(leaders) != 3 {
					return fmt.Errorf("leaders not spread over 3 brokers: %v", v)
				}
				view = v
				return nil
			})

			cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
			produceSync(t, cl, "test", 0, "before-kill")

			// Kill the broker leading partition 0: a new leader from the ISR takes over
			// and the dead broker leaves the ISR (it is in OSR).
			dead := view[0].Leader
			c.Kill(dead)
			brokertest.Eventually(t, 15*time.Second, func() error {
				v, _, err := describe(t, adm, "test")
				if err != nil {
					return err
				}
				pv := v[0]
				if pv.Leader == dead || pv.Leader < 0 {
					return fmt.Errorf("partition 0 leader still %d", pv.Leader)
				}
				if slices.Contains(pv.ISR, dead) {
					return fmt.Errorf("dead broker %d still in ISR %v", dead, pv.ISR)
				}
				if pv.Epoch <= view[0].Epoch {
					return fmt.Errorf("leader epoch not bumped: %d", pv.Epoch)
				}
				return nil
			})
			produceSync(t, cl, "test", 0, "after-kill")
			consumeN(t, c, "test", 0, 2)

			// Restart it: it rejoins the ISR; leaders are now unbalanced.
			c.Restart(dead)
			brokertest.Eventually(t, 20*time.Second, func() error {
				v, _, err := describe(t, adm, "test")
				if err != nil {
					return err
				}
				if !slices.Contains(v[0].ISR, dead) {
					return fmt.Errorf("broker %d has not rejoined the ISR of partition 0: %v", dead, v[0].ISR)
				}
				if v[0].Leader == dead {
					return fmt.Errorf("partition 0 moved back without an election")
				}
				return nil
			})

			// Preferred replica election restores the preferred leader.
			res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"test": {0: {}, 1: {}, 2: {}}})
			if err != nil {
				t.Fatal(err)
			}
			if r := res["test"][0]; r.Err != nil {
				t.Fatalf("preferred election of partition 0: %v", r.Err)
			}
			brokertest.Eventually(t, 10*time.Second, func() error {
				v, _, err := describe(t, adm, "test")
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
			produceSync(t, cl, "test", 0, "after-election")

			// Kill the controller: another broker becomes controller with a higher epoch.
			_, ctrl, err := describe(t, adm, "test")
			if err != nil {
				t.Fatal(err)
			}
			oldEpoch := controllerEpoch(t, c)
			c.Kill(ctrl)
			brokertest.Eventually(t, 15*time.Second, func() error {
				_, now, err := describe(t, adm, "test")
				if err != nil {
					return err
				}
				if now == ctrl || now < 0 {
					return fmt.Errorf("controller still %d", now)
				}
				if e := controllerEpoch(t, c); e <= oldEpoch {
					return fmt.Errorf("controller epoch %d not above %d", e, oldEpoch)
				}
				return nil
			})
			c.Restart(ctrl)

			// Kill every replica of partition 1: leader -1. Bring back one former ISR
			// member: it leads.
			// First let the restarted controller catch up: every replica in sync.
			var order []int32
			brokertest.Eventually(t, 20*time.Second, func() error {
				v, _, err := describe(t, adm, "test")
				if err != nil {
					return err
				}
				if len(v[1].ISR) != len(v[1].Replicas) {
					return fmt.Errorf("partition 1 ISR %v, AR %v", v[1].ISR, v[1].Replicas)
				}
				order = v[1].Replicas
				return nil
			})
			for i, id := range order {
				c.Kill(id)
				if i == len(order)-1 {
					break
				}
				// One at a time: the controller takes each out of the ISR, so
				// the last one killed is the last in-sync replica. On ZooKeeper
				// a killed controller is replaced only after its session
				// expires (6 s), and a loaded CI machine took longer than 15 s.
				survivors := c.Admin()
				brokertest.Eventually(t, 30*time.Second, func() error {
					v, _, err := describe(t, survivors, "test")
					if err != nil {
						return err
					}
					if slices.Contains(v[1].ISR, id) {
						return fmt.Errorf("killed broker %d still in ISR %v", id, v[1].ISR)
					}
					return nil
				})
			}
			last := order[len(order)-1]
			c.Restart(last)
			adm2 := c.Admin()
			brokertest.Eventually(t, 20*time.Second, func() error {
				v, _, err := describe(t, adm2, "test")
				if err != nil {
					return err
				}
				if v[1].Leader != last {
					return fmt.Errorf("partition 1 led by %d, want the returning ISR member %d (ISR %v)", v[1].Leader, last, v[1].ISR)
				}
				return nil
			})
		})
	}
}

// controllerEpoch reads /controller_epoch through a running broker's session.
func controllerEpoch(t *testing.T, c *brokertest.Cluster) int32 {
	t.Helper()
	for _, id := range c.IDs() {
		data, _, err := c.Broker(id).Store().Get(context.Background(), zkdata.ControllerEpochPath)
		if err != nil {
			continue
		}
		e, err := zkdata.DecodeControllerEpoch(data)
		if err == nil {
			return e
		}
	}
	t.Fatal("no broker could read /controller_epoch")
	return 0
}

func consumeN(t *testing.T, c *brokertest.Cluster, topic string, p int32, n int) []*kgo.Record {
	t.Helper()
	cl := c.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records from %s/%d", len(out), n, topic, p)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

// TestControllerFailoverCleansIsr: when the controller's broker dies, the new
// controller takes that broker out of the ISRs of partitions it followed, at
// failover rather than after replica.lag.time.max.ms.
func TestControllerFailoverCleansIsr(t *testing.T) {
	c := brokertest.NewCluster(t, 3, brokertest.WithProps(map[string]string{
		"auto.leader.rebalance.enable": "false",
		"replica.lag.time.max.ms":      "600000",
	}))
	adm := c.Admin()
	if _, err := adm.CreateTopic(context.Background(), 3, 3, nil, "f"); err != nil {
		t.Fatal(err)
	}
	_, ctrl, _ := describeWait(t, adm, "f")
	c.Kill(ctrl)
	brokertest.Eventually(t, 15*time.Second, func() error {
		v, now, err := describe(t, adm, "f")
		if err != nil {
			return err
		}
		if now == ctrl || now < 0 {
			return fmt.Errorf("controller still %d", now)
		}
		for p, pv := range v {
			if slices.Contains(pv.ISR, ctrl) {
				return fmt.Errorf("partition %d: dead broker %d still in ISR %v", p, ctrl, pv.ISR)
			}
		}
		return nil
	})
}
