package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ktoolhq/ktool/broker/brokertest"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
	"github.com/ktoolhq/ktool/tools/topic"
)

// Brokers in racks a, a, b, b, c, c: CreateTopics and CreatePartitions put
// each partition's replicas in different racks, and topic describe shows them.
func TestRackAwareAssignment(t *testing.T) {
	racks := []string{"a", "a", "b", "b", "c", "c"}
	c := brokertest.NewCluster(t, 6, brokertest.WithBrokerProps(func(id int32) map[string]string {
		return map[string]string{"broker.rack": racks[id]}
	}))
	env := cmdtest.NewEnv(t, c.Addrs())
	if err := run(t, env, topic.NewCreateCommand(env.F, nil), nil, "spread", "--partitions", "6", "--replication-factor", "3"); err != nil {
		t.Fatal(err)
	}
	if err := run(t, env, topic.NewAddPartitionsCommand(env.F, nil), nil, "spread", "--partitions", "12"); err != nil {
		t.Fatal(err)
	}
	var ts []topic.Topic
	brokertest.Eventually(t, 10*time.Second, func() error {
		if err := run(t, env, topic.NewDescribeCommand(env.F, nil), nil, "spread", "-o", "json"); err != nil {
			return err
		}
		if err := json.Unmarshal(env.Out.Bytes(), &ts); err != nil || len(ts) != 1 {
			return errorf("%v: %s", err, env.Out)
		}
		if len(ts[0].Partitions) != 12 {
			return errorf("%d partitions", len(ts[0].Partitions))
		}
		return nil
	})
	leaders := map[int32]int{}
	for _, p := range ts[0].Partitions {
		seen := map[string]bool{}
		for _, r := range p.Replicas {
			rack := ts[0].Racks[r]
			if rack != racks[r] {
				t.Errorf("describe says broker %d is in rack %q, it is in %q", r, rack, racks[r])
			}
			if seen[rack] {
				t.Errorf("partition %d has two replicas in rack %s: %v", p.Partition, rack, p.Replicas)
			}
			seen[rack] = true
		}
		leaders[p.Replicas[0]]++
	}
	for id := range int32(6) {
		if leaders[id] != 2 {
			t.Errorf("broker %d is the preferred leader of %d partitions, want 2: %v", id, leaders[id], leaders)
		}
	}
	if err := run(t, env, topic.NewDescribeCommand(env.F, nil), nil, "spread"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(env.Out.String(), "RACKS") {
		t.Errorf("the table has no racks:\n%s", env.Out)
	}
}
