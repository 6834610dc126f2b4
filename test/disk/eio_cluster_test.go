package disk

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/brokerproc"
	"github.com/ktoolhq/ktool/internal/brokerproc/proctest"
	"github.com/ktoolhq/ktool/internal/chaoscheck"
	"github.com/ktoolhq/ktool/internal/faultfs"
	"github.com/ktoolhq/ktool/internal/zktest"
)

// TestOneDirEIOUnderLoad: three brokers on ZooKeeper, RF=3; broker 1 has two
// log dirs, both FUSE mounts. Under an idempotent acks=all producer, the
// dir holding a partition broker 1 leads starts failing every write with
// EIO: the dir goes offline, its partitions are led by other brokers and
// list broker 1 as an offline replica, DescribeLogDirs and `ktool log-dirs
// describe` report KAFKA_STORAGE_ERROR for it, broker 1 stays up and in the
// ISR of its other dir's partitions, and no acknowledged record is lost
// (chaoscheck).
func TestOneDirEIOUnderLoad(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dirA, dirB := faultfs.Mount(t), faultfs.Mount(t)
	zk := zktest.Start(t)
	var addrs []string
	var one *brokerproc.Broker
	for id := int32(1); id <= 3; id++ {
		spec := brokerproc.Spec{Bin: ktoolBin, ID: id, Dir: t.TempDir(), ZooKeeper: zk.Addr() + "/eio",
			Overrides: []string{"replica.lag.time.max.ms=10000"}}
		if id == 1 {
			spec.Dir = dirA.Dir()
			spec.Args = []string{"--log-dirs", dirA.Dir() + "," + dirB.Dir()}
		}
		// Stopped after 3 s: the last brokers' controlled shutdowns cannot
		// move the leaders whose other replicas are gone and retry for
		// 15 s, as Kafka's do.
		b := proctest.Broker(t, spec, 3*time.Second)
		if id == 1 {
			one = b
		}
		addrs = append(addrs, b.Addr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	newClient := func(opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...),
			kgo.MetadataMinAge(100 * time.Millisecond), kgo.MetadataMaxAge(time.Second)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	cl := newClient()
	adm := kadm.NewClient(cl)
	const topic = "eio3"
	// Broker 1 leads partitions 0 and 3.
	assignment := [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}, {1, 3, 2}}
	createTopic(t, ctx, cl, topic, assignment)

	placed, err := adm.DescribeBrokerLogDirs(ctx, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	dirOf := map[int32]string{}
	for d, ld := range placed {
		for p := range ld.Topics[topic] {
			dirOf[p] = filepath.Clean(d)
		}
	}
	if len(dirOf) != 4 {
		t.Fatalf("broker 1 holds %v, want all four partitions", dirOf)
	}
	bad, good := dirA, dirB
	if dirOf[0] != dirA.Dir() {
		bad, good = dirB, dirA
	}
	var badParts, goodParts []int32
	for p := int32(0); p < 4; p++ {
		if dirOf[p] == bad.Dir() {
			badParts = append(badParts, p)
		} else {
			goodParts = append(goodParts, p)
		}
	}
	if len(goodParts) == 0 {
		t.Fatalf("every partition of broker 1 is in one dir: %v", dirOf)
	}
	t.Logf("broker 1: partitions %v in the dir that fails, %v in the other", badParts, goodParts)

	prod := chaoscheck.NewProducer(newClient, topic, 4, time.Minute)
	var acksAfter [4]int
	var faultAt time.Time
	var mu sync.Mutex
	prod.OnAck = func(p int32, at time.Time) {
		mu.Lock()
		defer mu.Unlock()
		if !faultAt.IsZero() && at.After(faultAt) {
			acksAfter[p]++
		}
	}
	stop := make(chan struct{})
	ran := make(chan struct{})
	go func() { defer close(ran); prod.Run(stop, 5*time.Millisecond) }()
	waitFor(t, ctx, "records acknowledged before the fault", func() bool { return prod.AckedCount() >= 200 })

	mu.Lock()
	faultAt = time.Now()
	mu.Unlock()
	bad.Set(faultfs.Fault{Ops: faultfs.Write})
	waitFor(t, ctx, "the failing dir offline in DescribeLogDirs", func() bool {
		ds, err := adm.DescribeBrokerLogDirs(ctx, 1, nil)
		return err == nil && errors.Is(ds[bad.Dir()].Err, kerr.KafkaStorageError) && ds[good.Dir()].Err == nil
	})
	waitFor(t, ctx, "the failing dir's partitions led elsewhere, broker 1 an offline replica there", func() bool {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return false
		}
		for _, p := range badParts {
			pd := md.Topics[topic].Partitions[p]
			if pd.Leader == 1 || pd.Leader < 0 || !slices.Contains(pd.OfflineReplicas, 1) || slices.Contains(pd.ISR, 1) {
				return false
			}
		}
		return true
	})
	// From now on the broker must leave the offline dir alone: every
	// operation on it that is more than a lookup counts.
	injected := bad.Injected()
	bad.Set(faultfs.Fault{Ops: faultfs.All})
	waitFor(t, ctx, "records acknowledged on every partition after the fault", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for p := range acksAfter {
			if acksAfter[p] < 20 {
				return false
			}
		}
		return true
	})
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range goodParts {
		pd := md.Topics[topic].Partitions[p]
		if !slices.Contains(pd.ISR, 1) || len(pd.OfflineReplicas) != 0 {
			t.Errorf("partition %d of broker 1's healthy dir: ISR %v, offline replicas %v; want broker 1 in the ISR", p, pd.ISR, pd.OfflineReplicas)
		}
	}
	if !one.Running() {
		t.Fatal("broker 1 stopped with one of its two dirs online")
	}
	close(stop)
	<-ran
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("producer: %s; %d operations failed on the disk before it was offline", prod.Summary(), injected)
	if n := bad.Injected() - injected; n != 0 {
		t.Errorf("broker 1 used its offline dir %d times", n)
	}

	out, err := exec.CommandContext(ctx, ktoolBin, "log-dirs", "describe", "--brokers", strings.Join(addrs, ","), "-o", "json").Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("log-dirs describe with a failed dir: %v, want exit status 1", err)
	}
	var rows []struct {
		Broker int32
		Dirs   []struct {
			Path  string
			Error string
		}
	}
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("log-dirs describe -o json: %v\n%s", err, out)
	}
	failed := 0
	for _, r := range rows {
		for _, d := range r.Dirs {
			switch {
			case r.Broker == 1 && filepath.Clean(d.Path) == bad.Dir():
				if !strings.Contains(d.Error, "KAFKA_STORAGE_ERROR") {
					t.Errorf("broker 1's failed dir is described with error %q", d.Error)
				}
				failed++
			case d.Error != "":
				t.Errorf("broker %d dir %s is described as failed: %s", r.Broker, d.Path, d.Error)
			}
		}
	}
	if failed != 1 {
		t.Errorf("log-dirs describe lists %d failed dirs, want 1:\n%s", failed, out)
	}

	ends := map[int32]int64{}
	offsets, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	offsets.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
	read, err := chaoscheck.ReadBack(ctx, newClient, topic, ends)
	if err != nil {
		t.Fatal(err)
	}
	acked, lost := prod.Acked()
	if len(lost) > 0 {
		t.Errorf("the producer detected data loss on %v", lost)
	}
	for _, p := range chaoscheck.CheckAcked(acked, read) {
		t.Error(p)
	}
}

// createTopic creates topic with an explicit replica assignment.
func createTopic(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, assignment [][]int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 15000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = topic
	rt.NumPartitions, rt.ReplicationFactor = -1, -1
	for p, replicas := range assignment {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition = int32(p)
		ra.Replicas = replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	waitFor(t, ctx, "every partition led by its first replica", func() bool {
		md, err := kadm.NewClient(cl).Metadata(ctx, topic)
		if err != nil {
			return false
		}
		for p, replicas := range assignment {
			pd, ok := md.Topics[topic].Partitions[int32(p)]
			if !ok || pd.Leader != replicas[0] || len(pd.ISR) != len(replicas) {
				return false
			}
		}
		return true
	})
}

// waitFor polls cond every 50 ms until it holds, failing the test after
// 30 s or when ctx ends.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("waiting for %s: gave up", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
