package broker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/brokertest"
)

// TestCommitSurvivesImmediateCoordinatorFailover: an acknowledged commit is
// served by the next coordinator even when the new leader's high watermark has
// not caught up yet (followers long-poll 5 s, so they learn it late).
func TestCommitSurvivesImmediateCoordinatorFailover(t *testing.T) {
	c := brokertest.NewCluster(t, 3, brokertest.WithProps(map[string]string{
		"group.initial.rebalance.delay.ms": "0",
		"offsets.topic.num.partitions":     "1",
		"replica.fetch.wait.max.ms":        "5000",
		"replica.lag.time.max.ms":          "15000",
	}))
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "t"); err != nil {
		t.Fatal(err)
	}
	commit := func(a *kadm.Client, at int64) error {
		os := kadm.Offsets{}
		os.AddOffset("t", 0, at, -1)
		r, err := a.CommitOffsets(ctx, "g", os)
		if err != nil {
			return err
		}
		return r.Error()
	}
	brokertest.Eventually(t, 30*time.Second, func() error { return commit(adm, 1) })
	if err := commit(adm, 42); err != nil {
		t.Fatal(err)
	}
	coord := adm.FindGroupCoordinators(ctx, "g")["g"]
	if coord.Err != nil {
		t.Fatal(coord.Err)
	}
	c.Kill(coord.NodeID)
	adm = c.Admin()
	brokertest.Eventually(t, 60*time.Second, func() error {
		if r := adm.FindGroupCoordinators(ctx, "g")["g"]; r.Err != nil || r.NodeID == coord.NodeID {
			return fmt.Errorf("no new coordinator yet (%v)", r.Err)
		}
		got, err := committed(ctx, adm, "g")
		if err != nil {
			return err
		}
		if got["t/0"] != 42 {
			return fmt.Errorf("new coordinator has %v, want t/0=42", got)
		}
		return nil
	})
}

// TestBadInputFromAdminClients: requests a client can send that must be refused
// without harm.
func TestBadInputFromAdminClients(t *testing.T) {
	c := brokertest.NewCluster(t, 1)
	cl := c.Client()
	adm := kadm.NewClient(cl)
	ctx := context.Background()

	// An assignment with no replicas is refused (it once reached the controller
	// and crashed the broker at the next "elect all").
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "empty", -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition = 0
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].ErrorCode; code != kerr.InvalidReplicaAssignment.Code {
		t.Fatalf("empty replica list: error %d, want INVALID_REPLICA_ASSIGNMENT", code)
	}
	if _, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, nil); err != nil {
		t.Fatalf("elect all after a refused topic: %v", err)
	}

	// Nobody but the group coordinator writes __consumer_offsets.
	os := kadm.Offsets{}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "x"); err != nil {
		t.Fatal(err)
	}
	os.AddOffset("x", 0, 0, -1)
	if r, err := adm.CommitOffsets(ctx, "creates-offsets-topic", os); err != nil || r.Error() != nil {
		t.Fatalf("commit: %v %v", err, r.Error())
	}
	perr := cl.ProduceSync(ctx, &kgo.Record{Topic: "__consumer_offsets", Value: []byte("forged")}).FirstErr()
	if !errors.Is(perr, kerr.InvalidTopicException) {
		t.Fatalf("produce to __consumer_offsets: %v, want INVALID_TOPIC_EXCEPTION", perr)
	}

	// DescribeConfigs with an empty (not null) name list means every config (kafkajs sends that).
	dreq := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName, res.ConfigNames = kmsg.ConfigResourceTypeTopic, "x", []string{}
	dreq.Resources = append(dreq.Resources, res)
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(dresp.Resources[0].Configs); n < 10 {
		t.Fatalf("empty config name list gave %d configs, want all of them", n)
	}
}
