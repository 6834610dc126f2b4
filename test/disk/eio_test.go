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
	"github.com/ktoolhq/ktool/internal/faultfs"
)

// eioRig is a standalone broker whose log dirs are an optional healthy
// temporary dir (first) and faulty FUSE mounts, with a topic of one
// partition per dir.
type eioRig struct {
	b      *brokerproc.Broker
	cl     *kgo.Client
	dirs   []string // the log dirs, in order
	faulty []*faultfs.FS
	part   map[string]int32 // log dir -> the topic's partition in it
}

const eioTopic = "eio"

func newEIORig(t *testing.T, ctx context.Context, healthy bool, nFaulty int, overrides ...string) *eioRig {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	r := &eioRig{part: map[string]int32{}}
	if healthy {
		r.dirs = append(r.dirs, t.TempDir())
	}
	for range nFaulty {
		f := faultfs.Mount(t)
		r.faulty = append(r.faulty, f)
		r.dirs = append(r.dirs, f.Dir())
	}
	r.b = proctest.Broker(t, brokerproc.Spec{Bin: ktoolBin, ID: 1, Dir: r.dirs[0], Overrides: overrides,
		Args: []string{"--log-dirs", strings.Join(r.dirs, ",")}}, 20*time.Second)
	var err error
	if r.cl, err = kgo.NewClient(kgo.SeedBrokers(r.b.Addr())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.cl.Close)
	if _, err := kadm.NewClient(r.cl).CreateTopic(ctx, int32(len(r.dirs)), 1, nil, eioTopic); err != nil {
		t.Fatal(err)
	}
	described, err := kadm.NewClient(r.cl).DescribeBrokerLogDirs(ctx, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range r.dirs {
		for p := range described[d].Topics[eioTopic] {
			r.part[d] = p
		}
	}
	if len(r.part) != len(r.dirs) {
		t.Fatalf("placement: %+v, want one partition in each of %v", described, r.dirs)
	}
	return r
}

// produceUntil writes records of 1 KiB to partition p until one is answered
// with an error and returns that error code and the keys acknowledged.
func (r *eioRig) produceUntil(t *testing.T, ctx context.Context, p int32, max int) (int16, []string) {
	t.Helper()
	var acked []string
	value := make([]byte, 1<<10)
	for i := range max {
		rand.Read(value)
		key := fmt.Sprintf("p%d-r%05d", p, i)
		code, err := produceTo(ctx, r.cl, eioTopic, p, []byte(key), value)
		if err != nil {
			t.Fatal(err)
		}
		if code != 0 {
			return code, acked
		}
		acked = append(acked, key)
	}
	return 0, acked
}

// offlineDirs asks the broker which of its dirs are offline, and with what.
func (r *eioRig) offlineDirs(t *testing.T, ctx context.Context) map[string]error {
	t.Helper()
	described, err := kadm.NewClient(r.cl).DescribeBrokerLogDirs(ctx, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]error{}
	for d, ld := range described {
		if ld.Err != nil {
			out[filepath.Clean(d)] = ld.Err
		}
	}
	return out
}

// waitOffline waits until exactly the dirs want are offline, each with
// KAFKA_STORAGE_ERROR.
func (r *eioRig) waitOffline(t *testing.T, ctx context.Context, want ...string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := r.offlineDirs(t, ctx)
		ok := len(got) == len(want)
		for _, d := range want {
			ok = ok && errors.Is(got[d], kerr.KafkaStorageError)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("offline dirs: %v, want %v with KAFKA_STORAGE_ERROR", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// healthyStillServes checks that the partition of dir takes a write and
// that the broker runs.
func (r *eioRig) healthyStillServes(t *testing.T, ctx context.Context, dir string) {
	t.Helper()
	if code, err := produceTo(ctx, r.cl, eioTopic, r.part[dir], nil, []byte("after")); err != nil || code != 0 {
		t.Fatalf("produce to the partition of the healthy dir: %v %v", err, kerr.ErrorForCode(code))
	}
	if !r.b.Running() {
		t.Fatal("the broker stopped with a dir still online")
	}
}

// TestEIOOnFsync: log.flush.interval.messages=1 syncs every write before
// it is acknowledged (and the periodic flush syncs too); the dir whose
// fsync fails goes offline, the write is answered KAFKA_STORAGE_ERROR, and
// the broker keeps serving its other dir. It fails only when neither the
// produce's sync nor the flusher reports the error (checked).
func TestEIOOnFsync(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := newEIORig(t, ctx, true, 1, "log.flush.interval.messages=1")
	bad, good := r.faulty[0].Dir(), r.dirs[0]
	if code, acked := r.produceUntil(t, ctx, r.part[bad], 20); code != 0 || len(acked) != 20 {
		t.Fatalf("healthy disk: %v after %d", kerr.ErrorForCode(code), len(acked))
	}
	r.faulty[0].Set(faultfs.Fault{Ops: faultfs.Sync})
	code, acked := r.produceUntil(t, ctx, r.part[bad], 20)
	if code != kerr.KafkaStorageError.Code || len(acked) != 0 {
		t.Fatalf("with fsync failing: %v after %d acknowledged, want KAFKA_STORAGE_ERROR at once", kerr.ErrorForCode(code), len(acked))
	}
	if r.faulty[0].Injected() == 0 {
		t.Fatal("no fsync failed")
	}
	r.waitOffline(t, ctx, bad)
	r.healthyStillServes(t, ctx, good)
}

// TestEIOOnRead: the disk starts failing reads under a consumer. Its fetch
// is answered KAFKA_STORAGE_ERROR or its connection is closed, never with
// records that are not the ones written; the dir goes offline and the
// broker keeps serving the other one.
func TestEIOOnRead(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := newEIORig(t, ctx, true, 1)
	bad, good := r.faulty[0].Dir(), r.dirs[0]
	p := r.part[bad]
	if code, acked := r.produceUntil(t, ctx, p, 200); code != 0 || len(acked) != 200 {
		t.Fatalf("healthy disk: %v after %d", kerr.ErrorForCode(code), len(acked))
	}
	if n, code, err := fetchFrom(ctx, r.cl, p, 0); err != nil || code != 0 || n == 0 {
		t.Fatalf("healthy fetch: %d records, %v, %v", n, kerr.ErrorForCode(code), err)
	}
	r.faulty[0].Set(faultfs.Fault{Ops: faultfs.Read})
	n, code, err := fetchFrom(ctx, r.cl, p, 0)
	switch {
	case err == nil && code == kerr.KafkaStorageError.Code && n == 0:
	case err != nil && !errors.Is(err, context.DeadlineExceeded):
		t.Logf("the fetch under a read fault lost its connection: %v", err)
	default:
		t.Fatalf("fetch under a read fault: %d records, %v, %v; want KAFKA_STORAGE_ERROR", n, kerr.ErrorForCode(code), err)
	}
	if r.faulty[0].Injected() == 0 {
		t.Fatal("no read failed")
	}
	r.waitOffline(t, ctx, bad)
	if _, code, err := fetchFrom(ctx, r.cl, p, 0); err != nil || code != kerr.KafkaStorageError.Code {
		t.Fatalf("fetch from the offline dir: %v %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code), err)
	}
	r.healthyStillServes(t, ctx, good)
	if n, code, err := fetchFrom(ctx, r.cl, r.part[good], 0); err != nil || code != 0 || n == 0 {
		t.Fatalf("fetch from the healthy dir: %d records, %v, %v", n, kerr.ErrorForCode(code), err)
	}
}

// TestEIOInsideABatch: a bad sector under the records of a batch, its
// header readable: the broker finds the batch and sends it with sendfile,
// which meets the EIO midway. The connection is closed (the response cannot
// be finished), and the dir must go offline as for any other read error;
// before, the dir stayed online and every fetch of the partition broke its
// connection at the same place, for ever.
func TestEIOInsideABatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := newEIORig(t, ctx, true, 1)
	bad, good := r.faulty[0], r.dirs[0]
	p := r.part[bad.Dir()]
	value := make([]byte, 64<<10)
	for i := range 3 {
		rand.Read(value)
		if code, err := produceTo(ctx, r.cl, eioTopic, p, nil, value); err != nil || code != 0 {
			t.Fatalf("produce %d: %v %v", i, err, kerr.ErrorForCode(code))
		}
	}
	// Inside the first batch, far from its header and the next one's.
	bad.Set(faultfs.Fault{Ops: faultfs.Read, At: 30000, Len: 1})
	n, code, err := fetchFrom(ctx, r.cl, p, 0)
	if err == nil && code != kerr.KafkaStorageError.Code {
		t.Fatalf("fetch over a bad sector: %d records, %v", n, kerr.ErrorForCode(code))
	}
	t.Logf("fetch over a bad sector: %v %v; %d reads failed", err, kerr.ErrorForCode(code), bad.Injected())
	r.waitOffline(t, ctx, bad.Dir())
	if _, code, err := fetchFrom(ctx, r.cl, p, 0); err != nil || code != kerr.KafkaStorageError.Code {
		t.Fatalf("fetch from the offline dir: %v %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code), err)
	}
	r.healthyStillServes(t, ctx, good)
}

// fetchFrom sends one fetch of partition p from offset and returns how many
// records came back (whole batches with good CRCs, or an error), and the
// partition's error code.
func fetchFrom(ctx context.Context, cl *kgo.Client, p int32, offset int64) (int, int16, error) {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.ReplicaID = -1
	req.MaxWaitMillis = 100
	req.MaxBytes = 1 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = eioTopic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = p
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = 1 << 20
	rp.CurrentLeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(rctx, cl)
	if err != nil {
		return 0, 0, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, 0, fmt.Errorf("fetch answer with %d topics", len(resp.Topics))
	}
	rp2 := resp.Topics[0].Partitions[0]
	n, err := countRecords(rp2.RecordBatches)
	return n, rp2.ErrorCode, err
}

// countRecords validates the served batches (whole, each with a good CRC)
// and counts their records.
func countRecords(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	hdrs, err := batch.ValidateLog(b)
	if err != nil {
		return 0, fmt.Errorf("served records that are not what was written: %w", err)
	}
	n := 0
	for _, h := range hdrs {
		n += int(h.NumRecords)
	}
	return n, nil
}

// TestEveryDirEIO: both log dirs of a broker start failing every write: it
// answers KAFKA_STORAGE_ERROR, shuts down cleanly with exit status 1 and
// says why, as README documents.
func TestEveryDirEIO(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := newEIORig(t, ctx, false, 2)
	for _, f := range r.faulty {
		f.Set(faultfs.Fault{Ops: faultfs.Write})
	}
	for _, f := range r.faulty {
		if !r.b.Running() {
			break
		}
		code, err := produceTo(ctx, r.cl, eioTopic, r.part[f.Dir()], nil, []byte("x"))
		if err == nil && code != kerr.KafkaStorageError.Code {
			t.Errorf("produce to %s with writes failing: %v, want KAFKA_STORAGE_ERROR", f.Dir(), kerr.ErrorForCode(code))
		}
	}
	select {
	case <-r.b.Done():
	case <-time.After(40 * time.Second):
		t.Fatal("the broker did not stop with every log dir failing")
	}
	var exit *exec.ExitError
	if err := r.b.ExitErr(); !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("exit: %v, want status 1", err)
	}
	logs := r.b.Logs()
	for _, want := range []string{"log dir failed", "shutting down: every log dir has failed", "broker stopped"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the broker's output does not say %q", want)
		}
	}
}

// TestFlakeyDiskRecovers: a disk that fails now and then (one operation in
// ten, of every kind) or tears a write (the bytes up to a budget land, the
// rest and every write after fail, so the broker cannot cut the torn batch
// off): the dir goes offline once, the other dir keeps serving; after the
// disk is healthy again and the broker restarted, recovery leaves only
// whole batches with consistent indexes (ktool log dump --verify-index) and
// every acknowledged record is there.
func TestFlakeyDiskRecovers(t *testing.T) {
	for _, c := range []struct {
		name  string
		fault faultfs.Fault
		torn  bool // a torn batch is left on disk for recovery to cut
	}{
		{"flakey", faultfs.Fault{Ops: faultfs.All, Fail: 1, Every: 10}, false},
		{"torn write", faultfs.Fault{Ops: faultfs.Write | faultfs.Sync, AfterBytes: 100<<10 + 300}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r := newEIORig(t, ctx, true, 1, "log.segment.bytes=32768", "log.index.interval.bytes=2048")
			f, good := r.faulty[0], r.dirs[0]
			p := r.part[f.Dir()]
			_, before := r.produceUntil(t, ctx, p, 50)
			f.Set(c.fault)
			code, during := r.produceUntil(t, ctx, p, 2000)
			if code != kerr.KafkaStorageError.Code {
				t.Fatalf("under the fault: %v after %d acknowledged, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code), len(during))
			}
			t.Logf("%d records acknowledged before the fault, %d under it; %d operations failed", len(before), len(during), f.Injected())
			r.waitOffline(t, ctx, f.Dir())
			r.healthyStillServes(t, ctx, good)
			if n := strings.Count(r.b.Logs(), "log dir failed: taking it offline"); n != 1 {
				t.Errorf("the dir was taken offline %d times, want once", n)
			}

			if err := r.b.Stop(20 * time.Second); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(f.Backing(), fmt.Sprintf("%s-%d", eioTopic, p))
			out, err := exec.Command(ktoolBin, "log", "dump", "--verify-index", dir).CombinedOutput()
			if c.torn && (err == nil || !strings.Contains(string(out), "torn tail")) {
				t.Fatalf("no torn batch on disk before the restart (ktool log dump --verify-index: %v):\n%s", err, tail(string(out), 5))
			}
			f.Clear()
			if err := r.b.Restart(); err != nil {
				t.Fatal(err)
			}
			if got := r.offlineDirs(t, ctx); len(got) != 0 {
				t.Fatalf("after the restart on a healthy disk: offline dirs %v", got)
			}
			seen := readKeys(t, ctx, r.b.Addr(), p)
			for _, k := range append(before, during...) {
				if !seen[k] {
					t.Errorf("acknowledged record %s is missing after the restart", k)
				}
			}
			if err := r.b.Stop(20 * time.Second); err != nil {
				t.Fatal(err)
			}
			out, err = exec.Command(ktoolBin, "log", "dump", "--verify-index", dir).CombinedOutput()
			if err != nil {
				t.Fatalf("ktool log dump --verify-index %s: %v\n%s", dir, err, tail(string(out), 20))
			}
		})
	}
}

// readKeys consumes partition p to its high watermark and returns the keys.
func readKeys(t *testing.T, ctx context.Context, addr string, p int32) map[string]bool {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{eioTopic: {p: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, eioTopic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(eioTopic, p)
	seen := map[string]bool{}
	for next := int64(0); next < end.Offset; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading back partition %d: at offset %d of %d: %v", p, next, end.Offset, ctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			seen[string(r.Key)] = true
			next = r.Offset + 1
		})
	}
	return seen
}
