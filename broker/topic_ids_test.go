package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/brokertest"
)

// Metadata v10+ carries each topic's id (KIP-516). Every broker learns the ids
// from the controller's UpdateMetadata, so every broker must answer with the
// id the topic was created with.
func TestMetadataReturnsTopicIDs(t *testing.T) {
	c := brokertest.NewCluster(t, 2)
	ctx := context.Background()
	adm := c.Admin()
	created, err := adm.CreateTopic(ctx, 2, 2, nil, "with-id")
	if err != nil || created.Err != nil {
		t.Fatalf("creating the topic: %v %v", err, created.Err)
	}
	if created.ID == [16]byte{} {
		t.Fatal("CreateTopics answered a zero topic id")
	}
	cl := c.Client()
	for _, id := range c.IDs() {
		brokertest.Eventually(t, 10*time.Second, func() error {
			req := kmsg.NewPtrMetadataRequest()
			req.SetVersion(10)
			rt := kmsg.NewMetadataRequestTopic()
			name := "with-id"
			rt.Topic = &name
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
			if err != nil {
				return err
			}
			if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
				return fmt.Errorf("broker %d: topics %+v", id, resp.Topics)
			}
			if got := resp.Topics[0].TopicID; got != created.ID {
				return fmt.Errorf("broker %d answers topic id %x, created with %x", id, got, created.ID)
			}
			return nil
		})
	}
}
