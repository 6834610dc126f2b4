package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceNumbered writes values "0".."n-1" (padded to size bytes), one record per
// batch, with the given timestamp (zero: now).
func produceNumbered(t testing.TB, cl *kgo.Client, topic string, p int32, from, n, size int, ts time.Time) {
	t.Helper()
	ctx := testCtx(t, time.Minute)
	for i := from; i < from+n; i++ {
		v := strconv.Itoa(i)
		v += strings.Repeat(".", max(0, size-len(v)))
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v), Timestamp: ts}).FirstErr(); err != nil {
			t.Fatalf("produce %s/%d #%d: %v", topic, p, i, err)
		}
	}
}

// checkNumbered consumes [from, to) and checks each value starts with its offset.
func checkNumbered(t testing.TB, b *broker, topic string, p int32, from, to int64) {
	t.Helper()
	for _, r := range consumeRange(t, b, topic, p, from, int(to-from)) {
		if v := strings.TrimRight(string(r.Value), "."); v != strconv.FormatInt(r.Offset, 10) {
			t.Fatalf("%s/%d offset %d holds %q", topic, p, r.Offset, v)
		}
	}
}

func logBytes(t testing.TB, dir string) int64 {
	t.Helper()
	ms, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, m := range ms {
		if fi, err := os.Stat(m); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// fetchError is the partition error a raw fetch at offset gets.
func fetchError(t testing.TB, b *broker, topic string, p int32, offset int64) error {
	t.Helper()
	rc := dialRaw(t, b.Addr())
	req := fetchRequest(topic, offset, 0)
	req.Topics[0].Partitions[0].Partition = p
	resp, err := rc.Request(req)
	if err != nil {
		t.Fatal(err)
	}
	return kerr.ErrorForCode(resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode)
}

func waitStartOffset(t testing.TB, adm *kadm.Client, topic string, p int32, atLeast int64) int64 {
	t.Helper()
	var start int64
	eventually(t, 60*time.Second, func() error {
		so, err := startOffsets(testCtx(t, 10*time.Second), adm, topic)
		if err != nil {
			return err
		}
		if start = so[p]; start < atLeast {
			return fmt.Errorf("log start offset of %s/%d is %d, want at least %d", topic, p, start, atLeast)
		}
		return nil
	})
	return start
}

func TestRetentionBytes(t *testing.T) {
	b := startBroker(t, "--override", "log.retention.check.interval.ms=100")
	adm := b.Admin(t)
	const topic, segment, retention = "ret-bytes", 1024, 4096
	createTopic(t, adm, topic, 1, map[string]*string{
		"segment.bytes":   kadm.StringPtr(strconv.Itoa(segment)),
		"retention.bytes": kadm.StringPtr(strconv.Itoa(retention)),
	})
	prod := b.Client(t, kgo.ProducerBatchCompression(kgo.NoCompression()))
	produceNumbered(t, prod, topic, 0, 0, 100, 200, time.Time{})
	// About 270 bytes a batch: 100 batches are ~27 KB, of which at most
	// retention.bytes plus the active segment stay.
	start := waitStartOffset(t, adm, topic, 0, 60)
	dir := filepath.Join(b.Dir(), topic+"-0")
	eventually(t, 30*time.Second, func() error {
		if n := logBytes(t, dir); n > retention+2*segment {
			return fmt.Errorf("%d bytes of segments left, retention.bytes is %d", n, retention)
		}
		return nil
	})
	if err := fetchError(t, b, topic, 0, 0); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Errorf("fetch at offset 0 after retention: %v, want OFFSET_OUT_OF_RANGE", err)
	}
	start = waitStartOffset(t, adm, topic, 0, start)
	checkNumbered(t, b, topic, 0, start, 100)
}

func TestRetentionMsAlteredOnALiveTopic(t *testing.T) {
	b := startBroker(t, "--override", "log.retention.check.interval.ms=100")
	adm := b.Admin(t)
	const topic = "ret-ms"
	createTopic(t, adm, topic, 1, map[string]*string{"segment.bytes": kadm.StringPtr("1024")})
	prod := b.Client(t, kgo.ProducerBatchCompression(kgo.NoCompression()))
	produceNumbered(t, prod, topic, 0, 0, 30, 100, time.Now().Add(-2*time.Hour))
	produceNumbered(t, prod, topic, 0, 30, 10, 100, time.Time{})
	// The default retention (7 days) keeps the two-hour-old records.
	if so, err := startOffsets(testCtx(t, 10*time.Second), adm, topic); err != nil || so[0] != 0 {
		t.Fatalf("start offset %v (%v) before retention.ms was lowered, want 0", so, err)
	}
	resp, err := adm.AlterTopicConfigs(testCtx(t, 10*time.Second),
		[]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("3600000")}}, topic)
	if err != nil || resp[0].Err != nil {
		t.Fatalf("lowering retention.ms: %v %+v", err, resp)
	}
	// About eight 170-byte batches fit a 1 KB segment: every old segment goes, the
	// one holding offset 30 (the first recent record) stays.
	start := waitStartOffset(t, adm, topic, 0, 20)
	if start > 30 {
		t.Fatalf("log start offset %d: a segment with recent records was deleted", start)
	}
	checkNumbered(t, b, topic, 0, start, 40)
}

func TestDeleteRecords(t *testing.T) {
	b := startBroker(t)
	adm := b.Admin(t)
	ctx := testCtx(t, time.Minute)
	const topic = "delete-records"
	createTopic(t, adm, topic, 2, map[string]*string{"segment.bytes": kadm.StringPtr("1024")})
	prod := b.Client(t, kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceNumbered(t, prod, topic, 0, 0, 30, 100, time.Time{})
	produceNumbered(t, prod, topic, 1, 0, 10, 100, time.Time{})

	del := func(p int32, at int64) kadm.DeleteRecordsResponse {
		t.Helper()
		resp, err := adm.DeleteRecords(ctx, kadm.Offsets{topic: {p: {Topic: topic, Partition: p, At: at}}})
		if err != nil {
			t.Fatalf("DeleteRecords %d@%d: %v", p, at, err)
		}
		r, ok := resp.Lookup(topic, p)
		if !ok {
			t.Fatalf("DeleteRecords %d@%d: no answer for the partition", p, at)
		}
		return r
	}
	// Inside a segment (17) on p0; "up to the high watermark" (-1) on p1.
	if r := del(0, 17); r.Err != nil || r.LowWatermark != 17 {
		t.Fatalf("DeleteRecords p0@17: %v, low watermark %d", r.Err, r.LowWatermark)
	}
	if r := del(1, -1); r.Err != nil || r.LowWatermark != 10 {
		t.Fatalf("DeleteRecords p1@-1: %v, low watermark %d, want 10", r.Err, r.LowWatermark)
	}
	if r := del(0, 5); r.Err != nil || r.LowWatermark != 17 {
		t.Errorf("DeleteRecords below the start: %v, low watermark %d, want 17 unchanged", r.Err, r.LowWatermark)
	}
	if r := del(0, 31); !errors.Is(r.Err, kerr.OffsetOutOfRange) {
		t.Errorf("DeleteRecords past the high watermark: %v, want OFFSET_OUT_OF_RANGE", r.Err)
	}
	so, err := startOffsets(ctx, adm, topic)
	if err != nil {
		t.Fatal(err)
	}
	if so[0] != 17 || so[1] != 10 {
		t.Fatalf("start offsets %v, want 17 and 10", so)
	}
	if err := fetchError(t, b, topic, 0, 16); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Errorf("fetch below the new start: %v, want OFFSET_OUT_OF_RANGE", err)
	}
	checkNumbered(t, b, topic, 0, 17, 30)
	// An earliest-offset consumer starts at the new log start.
	first := consumeRange(t, b, topic, 0, -2, 13)
	if first[0].Offset != 17 {
		t.Fatalf("consumer from the start begins at %d, want 17", first[0].Offset)
	}

	// The log start offset survives a clean restart, and new records go on after it.
	b.Stop(t)
	b.Restart(t)
	if so, err := startOffsets(ctx, adm, topic); err != nil || so[0] != 17 || so[1] != 10 {
		t.Fatalf("start offsets after restart %v (%v), want 17 and 10", so, err)
	}
	produceNumbered(t, prod, topic, 1, 10, 5, 100, time.Time{})
	checkNumbered(t, b, topic, 1, 10, 15)
}
