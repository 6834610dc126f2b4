package broker_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/brokertest"
	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// describeTopicConfig asks broker id for one config of topic: its value, or
// "" when it is not overridden.
func describeTopicConfig(ctx context.Context, t *testing.T, c *brokertest.Cluster, id int32, topic, name string) string {
	t.Helper()
	cl := c.Client()
	defer cl.Close()
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName, res.ConfigNames = kmsg.ConfigResourceTypeTopic, topic, []string{name}
	req.Resources = append(req.Resources, res)
	kresp, err := cl.Broker(int(id)).Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	resp := kresp.(*kmsg.DescribeConfigsResponse)
	if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 || len(resp.Resources[0].Configs) != 1 {
		t.Fatalf("broker %d describing %s: %+v", id, topic, resp.Resources)
	}
	cfg := resp.Resources[0].Configs[0]
	if cfg.Source != kmsg.ConfigSourceDynamicTopicConfig || cfg.Value == nil {
		return ""
	}
	return *cfg.Value
}

// A topic config change acknowledged by one broker is what every broker
// describes at once, before it followed the change notification: `configs
// alter` then `describe`, or a reassignment's throttles removed then looked
// at, must not show the old value for a moment.
func TestDescribeTopicConfigsReadsTheirStore(t *testing.T) {
	c := brokertest.NewCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := c.Admin()
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "t"); err != nil {
		t.Fatal(err)
	}
	brokertest.Eventually(t, 10*time.Second, func() error {
		for _, id := range c.IDs() {
			if _, _, ok := c.Broker(id).HostedLeaderAndEpoch("t", 0); !ok {
				return fmt.Errorf("broker %d does not host t-0 yet", id)
			}
		}
		return nil
	})

	// Alter through broker 0, describe on the others right after.
	cl := c.Client()
	defer cl.Close()
	for i := range 20 {
		want := strconv.Itoa(3600000 + i)
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Op, cfg.Value = "retention.ms", kmsg.IncrementalAlterConfigOpSet, &want
		res.Configs = append(res.Configs, cfg)
		req.Resources = append(req.Resources, res)
		kresp, err := cl.Broker(0).Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if r := kresp.(*kmsg.IncrementalAlterConfigsResponse).Resources; len(r) != 1 || r[0].ErrorCode != 0 {
			t.Fatalf("alter: %+v", r)
		}
		for _, id := range []int32{1, 2} {
			if got := describeTopicConfig(ctx, t, c, id, "t", "retention.ms"); got != want {
				t.Fatalf("broker %d describes retention.ms=%q right after it was set to %s", id, got, want)
			}
		}
	}

	// The store holds a change no broker has followed yet (its notification
	// not read): every broker describes it all the same.
	if _, err := c.Broker(0).Store().Set(ctx, zkdata.ConfigTopicPath("t"), zkdata.EncodeConfig(map[string]string{"retention.ms": "1234"}), -1); err != nil {
		t.Fatal(err)
	}
	for _, id := range c.IDs() {
		if got := describeTopicConfig(ctx, t, c, id, "t", "retention.ms"); got != "1234" {
			t.Errorf("broker %d describes retention.ms=%q, the store holds 1234", id, got)
		}
	}
}

// heldStore holds the first Get of path after it read, until release closes:
// a config load descheduled between reading the store and keeping what it read.
type heldStore struct {
	coord.Store
	path          string
	held          atomic.Bool
	read, release chan struct{}
}

func (s *heldStore) Get(ctx context.Context, path string) ([]byte, coord.Stat, error) {
	data, st, err := s.Store.Get(ctx, path)
	if path == s.path && s.held.CompareAndSwap(false, true) {
		close(s.read)
		<-s.release
	}
	return data, st, err
}

// A config load that read the store before a change never keeps its value
// after the load of that change: the broker that acknowledged an alter runs
// with it, not with what a late notification follower read before.
func TestConfigLoadsKeepTheNewest(t *testing.T) {
	c := brokertest.NewCluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Admin().CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": ptr("1000")}, "t"); err != nil {
		t.Fatal(err)
	}
	b := c.Broker(0)
	path := zkdata.ConfigTopicPath("t")
	hs := &heldStore{path: path, read: make(chan struct{}), release: make(chan struct{})}
	restore := b.WrapStore(func(s coord.Store) coord.Store { hs.Store = s; return hs })
	defer restore()

	late := make(chan struct{})
	go func() { defer close(late); b.ReloadConfig(ctx, "topics/t") }()
	<-hs.read // read retention.ms=1000, not kept yet

	if _, err := hs.Store.Set(ctx, path, zkdata.EncodeConfig(map[string]string{"retention.ms": "2000"}), -1); err != nil {
		t.Fatal(err)
	}
	acked := make(chan struct{})
	go func() { defer close(acked); b.ReloadConfig(ctx, "topics/t") }()
	// The load of the change waits for the late one, or (the bug) ends first.
	select {
	case <-acked:
	case <-time.After(200 * time.Millisecond):
	}
	close(hs.release)
	<-late
	<-acked
	if got := b.TopicOverrides("t")["retention.ms"]; got != "2000" {
		t.Fatalf("the broker keeps retention.ms=%s; the store holds 2000", got)
	}
}

func ptr(s string) *string { return &s }
