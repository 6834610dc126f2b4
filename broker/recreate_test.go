package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/broker/brokertest"
)

// TestTopicRecreatedAtOnceStartsEmpty: a topic deleted and created again at once
// must not keep the deleted incarnation's log. The StopReplica(delete) for the
// old topic can reach the broker after the new topic's znode exists; the broker
// tells the two apart by the topic znode's creation zxid.
func TestTopicRecreatedAtOnceStartsEmpty(t *testing.T) {
	c := brokertest.NewCluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for round := range 5 {
		cl := c.Client()
		adm := kadm.NewClient(cl)
		create := func() {
			brokertest.Eventually(t, 30*time.Second, func() error {
				resp, err := adm.CreateTopic(ctx, 1, 1, nil, "again")
				if err == nil {
					err = resp.Err
				}
				return err
			})
		}
		create()
		brokertest.Eventually(t, 30*time.Second, func() error {
			return cl.ProduceSync(ctx, &kgo.Record{Topic: "again", Value: []byte{byte(round)}}).FirstErr()
		})
		for i := range 9 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "again", Value: []byte{byte(i)}}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := adm.DeleteTopic(ctx, "again"); err != nil {
			t.Fatal(err)
		}
		create() // as soon as the name is free
		brokertest.Eventually(t, 30*time.Second, func() error {
			ends, err := adm.ListEndOffsets(ctx, "again")
			if err != nil {
				return err
			}
			o, ok := ends.Lookup("again", 0)
			switch {
			case !ok:
				return fmt.Errorf("no end offset yet")
			case o.Err != nil:
				return o.Err
			case o.Offset != 0:
				t.Fatalf("round %d: the recreated topic starts at end offset %d: the deleted topic's log was kept", round, o.Offset)
			}
			return nil
		})
		if _, err := adm.DeleteTopic(ctx, "again"); err != nil {
			t.Fatal(err)
		}
		brokertest.Eventually(t, 30*time.Second, func() error {
			if topics, err := adm.ListTopics(ctx); err != nil || topics.Has("again") {
				return fmt.Errorf("still listed (%v)", err)
			}
			return nil
		})
		cl.Close()
	}
}
