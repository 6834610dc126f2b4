package disk

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/internal/brokerproc"
	"github.com/ktoolhq/ktool/internal/brokerproc/proctest"
)

// TestMoveKilledMidCopy: a `ktool broker start` process with two log dirs
// is killed with SIGKILL while AlterReplicaLogDirs copies a partition (held
// back by replica.alter.log.dirs.io.max.bytes.per.second). It restarts with
// the partition in its first dir holding every acknowledged record and the
// leftover -future dir removed; moved again without the throttle, the
// partition ends in the second dir with the same records.
func TestMoveKilledMidCopy(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	first, second := t.TempDir(), t.TempDir()
	b := proctest.Broker(t, brokerproc.Spec{Bin: ktoolBin, ID: 1, Dir: first,
		Args:      []string{"--log-dirs", first + "," + second},
		Overrides: []string{"replica.alter.log.dirs.io.max.bytes.per.second=262144"}}, 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	const topic = "moving"
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	var acked []string
	value := make([]byte, 8<<10)
	for i := range 400 { // 3.2 MB
		rand.Read(value) // random: the client compresses
		v := fmt.Sprintf("r%04d", i)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: append([]byte(v), value...)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, v)
	}
	setRate := func(v string) {
		t.Helper()
		setMoveRate(ctx, t, adm, 1, v)
	}
	move := func() {
		t.Helper()
		var req kadm.AlterReplicaLogDirsReq
		req.Add(second, kadm.TopicsSet{topic: {0: {}}})
		res, err := adm.AlterBrokerReplicaLogDirs(ctx, 1, req)
		if err != nil {
			t.Fatal(err)
		}
		res.Each(func(r kadm.AlterReplicaLogDirsResponse) {
			if r.Err != nil {
				t.Fatalf("AlterReplicaLogDirs: %v", r.Err)
			}
		})
	}
	move()
	futures := func() []string {
		m, _ := filepath.Glob(filepath.Join(second, topic+"-0.*-future"))
		return m
	}
	waitUntil(t, "a partial copy", func() bool {
		dirs, err := adm.DescribeBrokerLogDirs(ctx, 1, nil)
		if err != nil {
			return false
		}
		p, ok := dirs[second].Topics[topic][0]
		return ok && p.IsFuture && p.Size > 0
	})
	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	if len(futures()) != 1 {
		ents, _ := os.ReadDir(second)
		t.Fatalf("no future log on disk after the kill: %v (%v)", futures(), ents)
	}
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	if f := futures(); len(f) != 0 {
		t.Fatalf("the future log survived the restart: %v", f)
	}
	if _, err := os.Stat(filepath.Join(first, topic+"-0")); err != nil {
		t.Fatalf("the current log after the restart: %v", err)
	}
	readAll(ctx, t, b.Addr(), topic, acked)

	setRate("1073741824")
	move()
	// The swap renames the future dir to -swap, the current one to -delete,
	// then -swap to its final name: only the last rename ends the move (the
	// test once looked between the second and the third and failed).
	waitUntil(t, "the move", func() bool {
		_, err := os.Stat(filepath.Join(first, topic+"-0"))
		_, moved := os.Stat(filepath.Join(second, topic+"-0"))
		return os.IsNotExist(err) && moved == nil && len(futures()) == 0
	})
	readAll(ctx, t, b.Addr(), topic, acked)
}

// setMoveRate sets the broker's replica.alter.log.dirs.io.max.bytes.per.second
// and waits until the broker applies it (it learns of the change from the
// store, so a move may begin before it does).
func setMoveRate(ctx context.Context, t *testing.T, adm *kadm.Client, id int32, v string) {
	t.Helper()
	const name = "replica.alter.log.dirs.io.max.bytes.per.second"
	res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: name, Value: kadm.StringPtr(v)}}, id)
	if err == nil {
		for _, r := range res {
			err = errors.Join(err, r.Err)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, name+"="+v, func() bool {
		rcs, err := adm.DescribeBrokerConfigs(ctx, id)
		if err != nil {
			return false
		}
		for _, rc := range rcs {
			for _, c := range rc.Configs {
				if c.Key == name && c.MaybeValue() == v {
					return true
				}
			}
		}
		return false
	})
}

func waitUntil(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readAll reads the partition from the start and checks it holds exactly
// want, in order.
func readAll(ctx context.Context, t *testing.T, addr, topic string, want []string) {
	t.Helper()
	rd, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var got []string
	for len(got) < len(want) && ctx.Err() == nil {
		rd.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(len(got)) {
				t.Fatalf("offset %d after %d records", r.Offset, len(got))
			}
			got = append(got, string(r.Value[:5]))
		})
	}
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Fatalf("record %d: got %d records, want %q there", i, len(got), want[i])
		}
	}
}
