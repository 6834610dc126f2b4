package broker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/broker/brokertest"
)

// A topic whose assignment does not fit one znode (ZooKeeper's 1 MiB
// jute.maxbuffer; about 60,000 partitions at RF=3) is refused with
// INVALID_PARTITIONS naming the limit, before anything is written: where one
// topic of 100,000 partitions breaks.
func TestTopicAssignmentTooLargeForZooKeeper(t *testing.T) {
	c := brokertest.NewCluster(t, 1, brokertest.WithProps(map[string]string{"max.broker.partitions": "200000"}))
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, 100_000, 1, nil, "huge")
	if err == nil {
		err = resp.Err
	}
	if !errors.Is(err, kerr.InvalidPartitions) || !strings.Contains(resp.ErrMessage, "jute.maxbuffer") {
		t.Fatalf("creating 100,000 partitions: %v (%q), want INVALID_PARTITIONS naming jute.maxbuffer", err, resp.ErrMessage)
	}
	topics, err := adm.ListTopics(ctx, "huge")
	if err != nil {
		t.Fatal(err)
	}
	if topics.Has("huge") && topics["huge"].Err == nil {
		t.Fatal("the refused topic exists")
	}
	if _, err := adm.CreateTopic(ctx, 10, 1, nil, "huge"); err != nil {
		t.Fatalf("the name is not free after the refusal: %v", err)
	}
}
