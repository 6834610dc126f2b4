package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDeleteAndRetentionUnderLoad deletes a topic, and runs retention on another,
// while producers and consumers are busy on them: the broker stays up, the deleted
// topic leaves the disk, and a re-created one starts empty.
func TestDeleteAndRetentionUnderLoad(t *testing.T) {
	b := startBroker(t, "--override", "log.retention.check.interval.ms=50")
	adm := b.Admin(t)
	const doomed, trimmed = "doomed", "trimmed"
	createTopic(t, adm, doomed, 3, map[string]*string{"segment.bytes": kadm.StringPtr("4096")})
	createTopic(t, adm, trimmed, 3, map[string]*string{"segment.bytes": kadm.StringPtr("4096"), "retention.bytes": kadm.StringPtr("8192")})

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	for _, topic := range []string{doomed, trimmed} {
		prod := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(time.Millisecond))
		cons := b.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				// Errors are expected once the topic is gone; only the broker's health matters.
				_ = prod.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%0100d", i)})
			}
		}()
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				cons.PollFetches(ctx)
			}
		}()
	}
	// Let data and segments pile up, then delete while everything runs.
	eventually(t, time.Minute, func() error {
		so, err := startOffsets(testCtx(t, 10*time.Second), adm, trimmed)
		if err != nil {
			return err
		}
		for p, o := range so {
			if o == 0 {
				return fmt.Errorf("retention has not trimmed %s/%d yet", trimmed, p)
			}
		}
		return nil
	})
	if r, err := adm.DeleteTopics(testCtx(t, 30*time.Second), doomed); err != nil || r[doomed].Err != nil {
		t.Fatalf("DeleteTopics under load: %v %v", err, r[doomed].Err)
	}
	eventually(t, 30*time.Second, func() error {
		if got := partitionDirs(t, b.Dir(), doomed); len(got) != 0 {
			return fmt.Errorf("still on disk: %v", got)
		}
		return nil
	})
	stop()
	wg.Wait()
	b.Alive(t)

	createTopic(t, adm, doomed, 1, nil)
	end, err := endOffsets(testCtx(t, 10*time.Second), adm, doomed)
	if err != nil {
		t.Fatal(err)
	}
	if end[0] != 0 {
		t.Fatalf("re-created topic ends at %d, want 0", end[0])
	}
	brokerStillWorks(t, b, doomed, "deleting under load")
	// With the producers stopped retention settles; then the kept records read
	// back from the log start.
	var so map[int32]int64
	eventually(t, 30*time.Second, func() error {
		prev := so
		var err error
		if so, err = startOffsets(testCtx(t, 10*time.Second), adm, trimmed); err != nil {
			return err
		}
		if fmt.Sprint(prev) != fmt.Sprint(so) {
			return fmt.Errorf("log start offsets still moving: %v", so)
		}
		return nil
	})
	eo, err := endOffsets(testCtx(t, 10*time.Second), adm, trimmed)
	if err != nil {
		t.Fatal(err)
	}
	for p, start := range so {
		if n := eo[p] - start; n > 0 {
			if got := consumeRange(t, b, trimmed, p, start, int(n)); got[0].Offset != start {
				t.Fatalf("%s/%d: first record at %d, log start %d", trimmed, p, got[0].Offset, start)
			}
		}
	}
}
