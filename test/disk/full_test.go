package disk

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/batch"
	"github.com/ktoolhq/ktool/internal/brokerproc"
	"github.com/ktoolhq/ktool/internal/brokerproc/proctest"
	"github.com/ktoolhq/ktool/internal/disktest"
)

// TestAllDirsFull fills the only log dir of a standalone broker while an
// acks=all producer writes: the write that does not fit is answered with
// KAFKA_STORAGE_ERROR (no stall), the broker, with no dir left, shuts down
// cleanly with exit status 1 and says why; after space is freed it starts
// again, every acknowledged record is there, and the log holds only whole
// batches with consistent indexes (ktool log dump --verify-index).
func TestAllDirsFull(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	small := disktest.Tmpfs(t, "3m")
	b := proctest.Broker(t, brokerproc.Spec{Bin: ktoolBin, ID: 1, Dir: small,
		Overrides: []string{"log.segment.bytes=524288"}}, 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const topic = "fill"
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	// Raw acks=all produce requests, one batch each, so every answer is seen
	// as the broker gave it (a client would retry KAFKA_STORAGE_ERROR).
	var acked []string
	var storageErr bool
	value := make([]byte, 16<<10)
	for i := 0; i < 1000 && b.Running(); i++ {
		rand.Read(value)
		key := fmt.Sprintf("r%04d", i)
		code, err := produceRaw(ctx, cl, topic, 0, []byte(key), value)
		switch {
		case errors.Is(err, context.DeadlineExceeded) && b.Running():
			t.Fatalf("produce %s: no answer in 15 s from the running broker: a full disk stalled it", key)
		case err != nil:
			t.Logf("produce %s after %d acknowledged: %v", key, len(acked), err)
		case code == 0:
			acked = append(acked, key)
		default:
			if code == kerr.KafkaStorageError.Code {
				storageErr = true
			}
			t.Logf("produce %s after %d acknowledged: %v", key, len(acked), kerr.ErrorForCode(code))
		}
	}
	if !storageErr {
		t.Error("no produce was answered KAFKA_STORAGE_ERROR")
	}
	select {
	case <-b.Done():
	case <-time.After(40 * time.Second):
		t.Fatal("the broker did not stop with its only log dir full")
	}
	var exit *exec.ExitError
	if err := b.ExitErr(); !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("exit: %v, want status 1", err)
	}
	logs := b.Logs()
	for _, want := range []string{"log dir failed", "shutting down: every log dir has failed", "broker stopped"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the broker's output does not say %q", want)
		}
	}
	t.Logf("%d records of 16 KiB acknowledged before the 3 MiB tmpfs filled", len(acked))

	// Space is freed; the broker starts, recovers the log and serves it all.
	disktest.Resize(t, small, "16m")
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	seen := map[string]bool{}
	for len(seen) < len(acked) && ctx.Err() == nil {
		rd.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen[string(r.Key)] = true })
	}
	for _, k := range acked {
		if !seen[k] {
			t.Errorf("acknowledged record %s is missing after the restart", k)
		}
	}
	if err := b.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(ktoolBin, "log", "dump", "--verify-index", filepath.Join(small, topic+"-0")).CombinedOutput()
	if err != nil {
		t.Fatalf("ktool log dump --verify-index: %v\n%s", err, tail(string(out), 20))
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// produceRaw sends one acks=all batch holding one record to partition p and
// returns the partition's error code; it gives up after 15 s.
func produceRaw(ctx context.Context, cl *kgo.Client, topic string, p int32, key, value []byte) (int16, error) {
	now := time.Now().UnixMilli()
	rec := batch.Encode(batch.Header{FirstTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1,
		BaseSequence: -1, NumRecords: 1}, batch.AppendRecord(nil, 0, 0, key, value, nil))
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = p
	rp.Records = rec
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	resp, err := req.RequestWith(rctx, cl)
	if err != nil {
		return 0, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, fmt.Errorf("produce answer with %d topics", len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0].ErrorCode, nil
}
