package broker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/brokertest"
)

func TestPartitionReassignment(t *testing.T) {
	c := brokertest.NewCluster(t, 3)
	adm := c.Admin()
	ctx := context.Background()
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "moving", -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{0, 1}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 10000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v %+v", err, resp)
	}
	for i := 0; i < 10; i++ {
		produceSync(t, cl, "moving", 0, fmt.Sprint("v", i))
	}

	alter := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	at := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	at.Topic = "moving"
	ap := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	ap.Partition, ap.Replicas = 0, []int32{2, 1}
	at.Partitions = append(at.Partitions, ap)
	alter.Topics = append(alter.Topics, at)
	aresp, err := alter.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := aresp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("reassignment refused: code %d", code)
	}
	brokertest.Eventually(t, 20*time.Second, func() error {
		v, _, err := describe(t, adm, "moving")
		if err != nil {
			return err
		}
		pv := v[0]
		if !slices.Equal(pv.Replicas, []int32{2, 1}) {
			return fmt.Errorf("replicas %v, want [2 1]", pv.Replicas)
		}
		if pv.Leader != 2 && pv.Leader != 1 {
			return fmt.Errorf("leader %d outside the target set", pv.Leader)
		}
		if slices.Contains(pv.ISR, 0) {
			return fmt.Errorf("removed replica 0 still in ISR %v", pv.ISR)
		}
		return nil
	})
	list := kmsg.NewPtrListPartitionReassignmentsRequest()
	lresp, err := list.RequestWith(ctx, cl)
	if err != nil || len(lresp.Topics) != 0 {
		t.Fatalf("reassignment still listed after completion: %v %+v", err, lresp)
	}
	brokertest.Eventually(t, 10*time.Second, func() error {
		if _, err := os.Stat(filepath.Join(c.Dir(0), "moving-0")); !os.IsNotExist(err) {
			return fmt.Errorf("broker 0 still has the partition's directory (%v)", err)
		}
		return nil
	})
	got := consumeN(t, c, "moving", 0, 10)
	for i, r := range got {
		if string(r.Value) != fmt.Sprint("v", i) || r.Offset != int64(i) {
			t.Fatalf("record %d = %q@%d after reassignment", i, r.Value, r.Offset)
		}
	}
}
