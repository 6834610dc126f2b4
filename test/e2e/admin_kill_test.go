package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAdminOperationsSurviveKill: a topic deletion requested just before a SIGKILL
// is finished after the restart (Kafka resumes it from /admin/delete_topics), and a
// topic created just before the kill is whole and writable afterwards.
func TestAdminOperationsSurviveKill(t *testing.T) {
	b := startBroker(t)
	adm := b.Admin(t)
	createTopic(t, adm, "to-delete", 4, nil)
	prod := b.Client(t, kgo.DefaultProduceTopic("to-delete"))
	if err := prod.ProduceSync(testCtx(t, 30*time.Second), &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	prod.Close()

	rc := dialRaw(t, b.Addr())
	// timeout 0: the broker marks the topics and answers without waiting.
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version = 4
	del.TopicNames = []string{"to-delete"}
	if _, err := rc.Request(del); err != nil {
		t.Fatal(err)
	}
	create := kmsg.NewPtrCreateTopicsRequest()
	create.Version = 4
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "fresh", 3, 1
	create.Topics = append(create.Topics, ct)
	if _, err := rc.Request(create); err != nil {
		t.Fatal(err)
	}
	b.Kill(t)
	b.Restart(t)

	eventually(t, time.Minute, func() error {
		td, err := adm.ListTopics(testCtx(t, 10*time.Second))
		if err != nil {
			return err
		}
		if td.Has("to-delete") {
			return fmt.Errorf("to-delete still listed after the restart")
		}
		if got := partitionDirs(t, b.Dir(), "to-delete"); len(got) != 0 {
			return fmt.Errorf("to-delete still on disk: %v", got)
		}
		return topicReady(metadataFor(t, dialRaw(t, b.Addr()), 9, false, "fresh"), "fresh", 3)
	})
	brokerStillWorks(t, b, "fresh", "admin operations cut by SIGKILL")
}
