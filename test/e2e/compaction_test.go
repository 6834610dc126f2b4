package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCompactedTopic: on a cleanup.policy=compact topic the cleaner keeps the
// latest record of each key at its original offset, drops older ones, keeps a
// tombstone in place of a deleted key, and leaves the high watermark alone.
func TestCompactedTopic(t *testing.T) {
	b := startBroker(t, "--override", "log.cleaner.backoff.ms=50")
	adm := b.Admin(t)
	const topic, keys, rounds = "compacted", 10, 20
	createTopic(t, adm, topic, 1, map[string]*string{
		"cleanup.policy":            kadm.StringPtr("compact"),
		"segment.bytes":             kadm.StringPtr("1024"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
		"delete.retention.ms":       kadm.StringPtr("3600000"),
	})
	prod := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx := testCtx(t, 2*time.Minute)
	produced := map[int64]*kgo.Record{} // by offset
	send := func(r *kgo.Record) {
		t.Helper()
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		produced[r.Offset] = r
	}
	latest := map[string]int64{}
	for round := range rounds {
		for k := range keys {
			key := "k" + strconv.Itoa(k)
			send(&kgo.Record{Key: []byte(key), Value: []byte(key + "-" + strconv.Itoa(round))})
			latest[key] = int64(len(produced) - 1)
		}
	}
	send(&kgo.Record{Key: []byte("k9"), Value: nil})
	latest["k9"] = int64(len(produced) - 1)
	// Later records so the ones above leave the active segment, which is never cleaned.
	for i := range 20 {
		send(&kgo.Record{Key: []byte("filler" + strconv.Itoa(i)), Value: []byte(strings.Repeat("f", 100))})
	}
	end := int64(len(produced))

	eventually(t, 90*time.Second, func() error {
		so, err := startOffsets(testCtx(t, 10*time.Second), adm, topic)
		if err != nil {
			return err
		}
		eo, err := endOffsets(testCtx(t, 10*time.Second), adm, topic)
		if err != nil {
			return err
		}
		if so[0] != 0 || eo[0] != end {
			t.Fatalf("compaction moved the offsets: start %d end %d, want 0 and %d", so[0], eo[0], end)
		}
		got := readUntil(t, b, topic, end)
		for _, r := range got {
			want := produced[r.Offset]
			if want == nil || string(r.Key) != string(want.Key) || string(r.Value) != string(want.Value) || (r.Value == nil) != (want.Value == nil) {
				t.Fatalf("offset %d holds %q=%q after cleaning, %q=%q was written there", r.Offset, r.Key, r.Value, want.Key, want.Value)
			}
		}
		for key, off := range latest {
			found := false
			for _, r := range got {
				if string(r.Key) == key && r.Offset == off {
					found = true
				}
			}
			if !found {
				t.Fatalf("latest record of %s (offset %d) is gone", key, off)
			}
		}
		if n := countKeyed(got, "k"); n != keys {
			return fmt.Errorf("%d records of the %d keys remain, want one each", n, keys)
		}
		return nil
	})
}

// readUntil reads partition 0 from offset 0 until a record at or past end-1.
func readUntil(t testing.TB, b *broker, topic string, end int64) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testCtx(t, 30*time.Second)
	var out []*kgo.Record
	for len(out) == 0 || out[len(out)-1].Offset < end-1 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s: read %d records, never reached offset %d", topic, len(out), end-1)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("%s/%d: %v", e.Topic, e.Partition, e.Err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// countKeyed counts records whose key is prefix followed by digits only.
func countKeyed(rs []*kgo.Record, prefix string) int {
	n := 0
	for _, r := range rs {
		k := string(r.Key)
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			if _, err := strconv.Atoi(rest); err == nil {
				n++
			}
		}
	}
	return n
}
