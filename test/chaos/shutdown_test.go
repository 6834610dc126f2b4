package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ktoolhq/ktool/internal/chaoscheck"
)

// TestControlledShutdownMovesLeaders stops the broker leading the most
// partitions with SIGTERM while an acks=all idempotent producer writes to
// every partition. The producer must see only retriable errors and lose
// nothing, the broker must exit cleanly, and once it has exited no
// partition may be led by it, neither in ZooKeeper nor in any live broker's
// metadata, and no partition state may have needed a change after it
// deregistered.
func TestControlledShutdownMovesLeaders(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level test: runs without -short")
	}
	t.Parallel()
	const topic = "shutdown"
	const partitions = 6
	ctx := testContext(t, 5*time.Minute)
	c := newCluster(t, 3, "/shutdown1")
	adm := c.admin()
	c.createTopic(ctx, topic, partitions, 3)

	m, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	victim, most := int32(-1), 0
	for _, id := range c.ids() {
		n := 0
		for _, p := range m.Topics[topic].Partitions {
			if p.Leader == id {
				n++
			}
		}
		if n > most {
			victim, most = id, n
		}
	}
	if victim < 0 {
		t.Fatalf("no broker leads a partition of %s", topic)
	}
	var survivor int32
	for _, id := range c.ids() {
		if id != victim {
			survivor = id
			break
		}
	}

	prod, err := newRawProducer(ctx, c, survivor, topic, partitions)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { prod.run(ctx, stop, 5*time.Millisecond) })
	stopProducing := sync.OnceFunc(func() {
		close(stop)
		wg.Wait()
	})
	t.Cleanup(stopProducing)
	waitRaw := func(n int) error {
		want := prod.ackedCount() + n
		return poll(ctx, time.Minute, func(context.Context) error {
			if got := prod.ackedCount(); got < want {
				return fmt.Errorf("%d of %d records acknowledged; retriable errors:%s", got, want, prod.errorSummary())
			}
			return nil
		})
	}
	if err := waitRaw(600); err != nil {
		t.Fatalf("before the shutdown: %v", err)
	}

	t.Logf("SIGTERM to broker %d, leader of %d of %d partitions", victim, most, partitions)
	began := time.Now()
	if err := c.terminate(victim, time.Minute); err != nil {
		t.Errorf("broker %d did not shut down cleanly: %v", victim, err)
	}
	t.Logf("broker %d exited %v after SIGTERM", victim, time.Since(began).Round(time.Millisecond))

	// ZooKeeper holds the partition state the controller wrote. As in
	// Kafka, controlled shutdown moves every leadership away from the broker
	// and takes it out of every ISR before it deregisters, so that its
	// deregistration leaves the controller nothing to do: every partition
	// state must have changed at a lower zxid than the removal of
	// /brokers/ids/<victim> (the pzxid of /brokers/ids). A later change means
	// failover did part of the work after the broker was gone.
	states, deregistered := partitionStates(t, c, topic, partitions)
	for p, st := range states {
		if st.Leader == victim {
			t.Errorf("%s-%d: ZooKeeper state still names broker %d as leader after it exited: %+v", topic, p, victim, st)
		}
		if st.mzxid > deregistered {
			was := "a follower"
			if m.Topics[topic].Partitions[p].Leader == victim {
				was = "the leader"
			}
			t.Errorf("%s-%d: state %+v last changed at zxid %d, after broker %d (%s before) deregistered at zxid %d: controlled shutdown must leave nothing to change", topic, p, st, st.mzxid, victim, was, deregistered)
		}
	}
	for _, id := range c.ids() {
		if id == victim {
			continue
		}
		if err := poll(ctx, 10*time.Second, func(ctx context.Context) error {
			return notLeading(ctx, c, id, topic, victim)
		}); err != nil {
			t.Errorf("metadata of broker %d: %v", id, err)
		}
	}

	if err := waitRaw(600); err != nil {
		t.Errorf("after the shutdown: %v", err)
	}
	stopProducing()
	t.Logf("%d records acknowledged; retriable errors seen:%s", prod.ackedCount(), prod.errorSummary())
	for _, f := range prod.fatal {
		t.Errorf("non-retriable produce error: %s", f)
	}

	ends := map[int32]int64{}
	if err := poll(ctx, time.Minute, func(ctx context.Context) error {
		lo, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return err
		}
		if err := lo.Error(); err != nil {
			return err
		}
		lo.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	read, err := chaoscheck.ReadBack(ctx, c.client, topic, ends)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range chaoscheck.CheckAcked(prod.acked, read) {
		t.Error(p)
	}
}

// partitionState is the JSON of /brokers/topics/T/partitions/P/state.
type partitionState struct {
	ControllerEpoch int32   `json:"controller_epoch"`
	Leader          int32   `json:"leader"`
	LeaderEpoch     int32   `json:"leader_epoch"`
	ISR             []int32 `json:"isr"`
	mzxid           int64
}

// partitionStates reads every partition's state znode from the cluster's
// ZooKeeper chroot, and the zxid of the last change of /brokers/ids'
// children.
func partitionStates(t *testing.T, c *cluster, topic string, partitions int32) (map[int32]partitionState, int64) {
	t.Helper()
	server, chroot, _ := strings.Cut(c.zk, "/")
	conn, _, err := zk.Connect([]string{server}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	out := map[int32]partitionState{}
	for p := int32(0); p < partitions; p++ {
		path := fmt.Sprintf("/%s/brokers/topics/%s/partitions/%d/state", chroot, topic, p)
		data, stat, err := conn.Get(path)
		if err != nil {
			t.Fatalf("zookeeper %s: %v", path, err)
		}
		var st partitionState
		if err := json.Unmarshal(data, &st); err != nil {
			t.Fatalf("zookeeper %s: %v in %q", path, err, data)
		}
		st.mzxid = stat.Mzxid
		out[p] = st
	}
	ids := fmt.Sprintf("/%s/brokers/ids", chroot)
	_, stat, err := conn.Get(ids)
	if err != nil {
		t.Fatalf("zookeeper %s: %v", ids, err)
	}
	return out, stat.Pzxid
}

// notLeading is nil when broker id's own metadata names no partition of
// topic led by gone.
func notLeading(ctx context.Context, c *cluster, id int32, topic string, gone int32) error {
	m, err := c.brokerMetadata(ctx, id, topic)
	if err != nil {
		return err
	}
	for _, t := range m.Topics {
		for _, p := range t.Partitions {
			if p.Leader == gone {
				return fmt.Errorf("%s-%d still led by broker %d", topic, p.Partition, gone)
			}
		}
	}
	return nil
}
