package broker_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/broker/brokertest"
	"github.com/ktoolhq/ktool/internal/disktest"
)

// A log dir of broker 0 fills up while acks=all producers write to its
// partitions (KIP-112): the dir goes offline on broker 0, the controller,
// told through the log dir event notification, elects other leaders and
// lists broker 0 in offline_replicas of those partitions only, broker 0 keeps
// serving its other dir, DescribeLogDirs reports the full dir with
// KAFKA_STORAGE_ERROR, and every acknowledged record is read back.
func TestLogDirFullGoesOffline(t *testing.T) {
	for _, s := range brokertest.Stores {
		t.Run(string(s), func(t *testing.T) { testLogDirFull(t, s) })
	}
}

func testLogDirFull(t *testing.T, store brokertest.Store) {
	small := disktest.Tmpfs(t, "2m")
	healthy := t.TempDir()
	c := brokertest.NewCluster(t, 3, brokertest.WithStore(store), brokertest.WithBrokerProps(func(id int32) map[string]string {
		if id != 0 {
			return nil
		}
		return map[string]string{"log.dirs": healthy + "," + small}
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := c.Admin()
	const topic = "disk"
	if _, err := adm.CreateTopic(ctx, 4, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic); err != nil {
		t.Fatal(err)
	}
	onSmall := map[int32]bool{}
	waitFor(t, "broker 0 to place its 4 replicas in both dirs", func() bool {
		dirs, err := adm.DescribeBrokerLogDirs(ctx, 0, nil)
		if err != nil {
			return false
		}
		n := 0
		clear(onSmall)
		for _, d := range dirs {
			for _, p := range d.Topics[topic] {
				n++
				if d.Dir == small {
					onSmall[p.Partition] = true
				}
			}
		}
		return n == 4
	})
	if len(onSmall) != 2 {
		t.Fatalf("partitions on the tmpfs: %v, want 2 of 4 (least-loaded placement)", onSmall)
	}

	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(60*time.Second))
	defer cl.Close()
	value := make([]byte, 16<<10) // random: the client compresses
	acked := map[string]bool{}
	for i := range 200 {
		for p := range int32(4) {
			key := fmt.Sprintf("%d-%d", p, i)
			rand.Read(value)
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Key: []byte(key), Value: value}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", key, err)
			}
			acked[key] = true
		}
	}

	var full kadm.DescribedLogDir
	waitFor(t, "DescribeLogDirs of broker 0 to report the full dir", func() bool {
		dirs, err := adm.DescribeBrokerLogDirs(ctx, 0, nil)
		if err != nil {
			return false
		}
		full = dirs[small]
		return errors.Is(full.Err, kerr.KafkaStorageError) && dirs[healthy].Err == nil && len(dirs[healthy].Topics[topic]) == 2
	})
	if len(full.Topics) != 0 {
		t.Errorf("the failed dir lists partitions: %v", full.Topics)
	}
	waitFor(t, "leaders elsewhere and broker 0 offline for the tmpfs partitions only", func() bool {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return false
		}
		for _, p := range md.Topics[topic].Partitions {
			off := slices.Contains(p.OfflineReplicas, 0)
			if onSmall[p.Partition] != off || onSmall[p.Partition] && (p.Leader == 0 || slices.Contains(p.ISR, 0)) {
				return false
			}
		}
		return true
	})
	if b := c.Broker(0); b == nil {
		t.Fatal("broker 0 is gone")
	}
	select {
	case err := <-c.Broker(0).Failed():
		t.Fatalf("broker 0 stopped with a dir still online: %v", err)
	default:
	}

	// Everything acknowledged is there, on the leaders now serving.
	seen := map[string]bool{}
	rd := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer rd.Close()
	for len(seen) < len(acked) && ctx.Err() == nil {
		fs := rd.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Key)] = true })
	}
	for k := range acked {
		if !seen[k] {
			t.Errorf("acknowledged record %s was not read back", k)
		}
	}
	t.Logf("%d records acknowledged and read back; tmpfs dir %s offline", len(acked), filepath.Base(small))
}

func waitFor(t *testing.T, what string, f func() bool) {
	t.Helper()
	brokertest.Eventually(t, 30*time.Second, func() error {
		if f() {
			return nil
		}
		return fmt.Errorf("waiting for %s", what)
	})
}
