package chaos

// TestNoAcknowledgedWriteLost (20 kills), TestNoAcknowledgedWriteLostUnsettled
// and TestNoAcknowledgedWriteLostPaused (10 each) run in CI, in parallel,
// in about 4 minutes:
//
//	go test ./test/chaos -run TestNoAcknowledgedWriteLost -v
//
// The long version kills 100 times or more:
//
//	KTOOL_CHAOS_KILLS=100 go test ./test/chaos -run 'TestNoAcknowledgedWriteLost$' -v -timeout 120m
//
// KTOOL_CHAOS_SEED=N replays the victim choices of a run (its seed is
// logged), and KTOOL_CHAOS_KEEP=DIR keeps the brokers' data and logs.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ktoolhq/ktool/internal/chaoscheck"
)

const (
	chaosTopic      = "chaos"
	chaosPartitions = 6
)

// envInt reads a positive integer setting, def when unset.
func envInt(t *testing.T, name string, def int64) int64 {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

// testContext is bounded by budget and by the test binary's own deadline,
// keeping a minute to report.
func testContext(t *testing.T, budget time.Duration) context.Context {
	deadline := time.Now().Add(budget)
	if d, ok := t.Deadline(); ok && d.Add(-time.Minute).Before(deadline) {
		deadline = d.Add(-time.Minute)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	t.Cleanup(cancel)
	return ctx
}

// TestNoAcknowledgedWriteLost lets the cluster heal after every kill: the
// broker is back in every ISR and the producer has made progress before the
// next one.
func TestNoAcknowledgedWriteLost(t *testing.T) {
	noAcknowledgedWriteLost(t, "/chaos1", faultKill, true, 20)
}

// TestNoAcknowledgedWriteLostUnsettled kills the next broker as soon as the
// previous one is registered again, while it may still be catching up: ISRs
// shrink to one replica, partitions go offline until their last in-sync
// replica returns, and leaders are elected from short ISRs, all of which
// must keep every acknowledged record.
func TestNoAcknowledgedWriteLostUnsettled(t *testing.T) {
	noAcknowledgedWriteLost(t, "/chaos2", faultKill, false, 10)
}

// TestNoAcknowledgedWriteLostPaused freezes a broker with SIGSTOP until its
// ZooKeeper session has expired and its partitions have new leaders, then
// lets it run again with SIGCONT. The resumed broker still believes it leads
// and finds produce requests queued on its sockets: as a stale leader it
// must acknowledge none of them, and it must register again and rejoin the
// ISRs.
func TestNoAcknowledgedWriteLostPaused(t *testing.T) {
	noAcknowledgedWriteLost(t, "/chaos3", faultPause, true, 10)
}

// fault is what happens to the victim broker.
type fault int

const (
	faultKill  fault = iota // SIGKILL, then a new process
	faultPause              // SIGSTOP until the broker is gone, then SIGCONT
)

// noAcknowledgedWriteLost runs defaultKills faults, or KTOOL_CHAOS_KILLS.
// The tests run in parallel: most of their time is spent waiting for
// sessions to expire.
func noAcknowledgedWriteLost(t *testing.T, chroot string, f fault, settle bool, defaultKills int64) {
	if testing.Short() {
		t.Skip("process-level chaos test: minutes long; runs without -short")
	}
	t.Parallel()
	kills := int(envInt(t, "KTOOL_CHAOS_KILLS", defaultKills))
	seed := uint64(envInt(t, "KTOOL_CHAOS_SEED", time.Now().UnixNano()))
	t.Logf("%d kills, KTOOL_CHAOS_SEED=%d", kills, seed)
	ctx := testContext(t, time.Duration(kills)*time.Minute+5*time.Minute)

	c := newCluster(t, 3, chroot)
	adm := c.admin()
	c.createTopic(ctx, chaosTopic, chaosPartitions, 3)

	prod := chaoscheck.NewProducer(c.client, chaosTopic, chaosPartitions, 3*time.Minute)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { prod.Run(stop, 5*time.Millisecond) })
	stopProducing := sync.OnceFunc(func() {
		close(stop)
		wg.Wait()
	})
	t.Cleanup(stopProducing)
	if err := waitProgress(ctx, prod, 500, time.Minute); err != nil {
		t.Fatalf("producer never got going: %v\n%s", err, prod.Summary())
	}
	live := chaoscheck.NewLiveConsumer(c.client, chaosTopic, chaosPartitions)
	liveCtx, stopLive := context.WithCancel(ctx)
	var liveWG sync.WaitGroup
	liveWG.Go(func() { live.Run(liveCtx) })
	stopConsuming := sync.OnceFunc(func() {
		stopLive()
		liveWG.Wait()
	})
	t.Cleanup(stopConsuming)

	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var controllerKills, leaderKills int
	for i := 0; i < kills && !t.Failed(); i++ {
		start := time.Now()
		m, err := adm.Metadata(ctx, chaosTopic)
		if err != nil {
			t.Errorf("kill %d: metadata: %v", i+1, err)
			break
		}
		victim := pickVictim(i, rng, m, c.ids())
		led := leaderships(m, victim)
		role := fmt.Sprintf("leader of %d partitions", led)
		if led > 0 {
			leaderKills++
		}
		if m.Controller == victim {
			controllerKills++
			role = "controller, " + role
		}
		if f == faultPause {
			c.pause(victim)
		} else {
			c.kill(victim)
		}
		if err := poll(ctx, 30*time.Second, func(ctx context.Context) error {
			return c.listedBy(ctx, victim, false)
		}); err != nil {
			t.Logf("kill %d: broker %d still in the metadata: %v", i+1, victim, err)
		}
		gone := time.Since(start)
		if f == faultPause {
			c.resume(victim)
		} else {
			c.start(victim)
			if err := c.awaitReady(victim); err != nil {
				t.Errorf("kill %d: restart of broker %d: %v", i+1, victim, err)
				break
			}
		}
		if !settle {
			if err := poll(ctx, time.Minute, func(ctx context.Context) error {
				return c.listedBy(ctx, victim, true)
			}); err != nil {
				t.Errorf("kill %d: broker %d restarted but not registered: %v", i+1, victim, err)
				break
			}
			t.Logf("kill %d/%d: broker %d (%s): gone from metadata after %v, back after %v; %d records acknowledged so far",
				i+1, kills, victim, role, gone.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), prod.AckedCount())
			continue
		}
		if err := poll(ctx, 2*time.Minute, func(ctx context.Context) error {
			return c.fullISR(ctx, chaosTopic, chaosPartitions)
		}); err != nil {
			t.Errorf("kill %d: broker %d did not rejoin the ISRs: %v", i+1, victim, err)
			break
		}
		healed := time.Since(start)
		if err := waitProgress(ctx, prod, 300, time.Minute); err != nil {
			t.Errorf("kill %d: producer stalled after broker %d came back: %v\n%s", i+1, victim, err, prod.Summary())
			break
		}
		t.Logf("kill %d/%d: broker %d (%s): gone from metadata after %v, ISRs full after %v; %d records acknowledged so far",
			i+1, kills, victim, role, gone.Round(time.Millisecond), healed.Round(time.Millisecond), prod.AckedCount())
	}
	t.Logf("the kills hit the controller %d times and partition leaders %d times", controllerKills, leaderKills)
	if !settle && !t.Failed() {
		if err := waitProgress(ctx, prod, 300, 3*time.Minute); err != nil {
			t.Errorf("producer stalled after the last kill: %v\n%s", err, prod.Summary())
		}
	}
	if kills >= 3 && !t.Failed() && (controllerKills == 0 || leaderKills == 0) {
		t.Errorf("the kills hit the controller %d times and partition leaders %d times; both must be hit", controllerKills, leaderKills)
	}

	verifyRun(ctx, t, c, adm, prod, stopProducing, live, stopConsuming)
}

// verifyRun stops the producer, flushes it and checks the run: the producer
// detected no data loss; every acknowledged record is read back once, at its
// offset, in order (checkAcked); the live consumer saw no data-loss report,
// no offset twice, no offset under two epochs, and nothing it read was
// rewritten or is missing from the final logs; and after a clean shutdown all
// replicas hold the same batches.
func verifyRun(ctx context.Context, t *testing.T, c *cluster, adm *kadm.Client, prod *chaoscheck.Producer, stopProducing func(), live *chaoscheck.LiveConsumer, stopConsuming func()) {
	t.Helper()
	stopProducing()
	fctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	if err := prod.Flush(fctx); err != nil {
		t.Errorf("flushing the producer: %v", err)
	}
	t.Logf("producer: %s", prod.Summary())
	acked, lost := prod.Acked()
	if len(lost) > 0 {
		t.Errorf("the producer detected data loss (sequence numbers the broker no longer knows) on %v", lost)
	}

	if err := poll(ctx, 2*time.Minute, func(ctx context.Context) error {
		return c.fullISR(ctx, chaosTopic, chaosPartitions)
	}); err != nil {
		t.Fatalf("ISRs not full after the run: %v", err)
	}
	ends := highWatermarks(ctx, t, adm)
	read, err := chaoscheck.ReadBack(ctx, c.client, chaosTopic, ends)
	if err != nil {
		t.Fatal(err)
	}
	stopConsuming()
	problems := chaoscheck.CheckAcked(acked, read)
	liveViolations, liveCount, liveErrs := live.Report()
	problems = append(problems, liveViolations...)
	problems = append(problems, live.CompareFinal(read)...)
	t.Logf("live consumer: %d records read, %d violations, fetch errors %v", liveCount, len(liveViolations), liveErrs)
	for i, p := range problems {
		if i == 40 {
			t.Errorf("... and %d more", len(problems)-i)
			break
		}
		t.Error(p)
	}
	total := 0
	for _, recs := range read {
		total += len(recs)
	}
	t.Logf("read back %d records up to the high watermarks %v: %d problems", total, ends, len(problems))

	compareReplicasAfterShutdown(ctx, t, c, adm, chaosTopic, chaosPartitions)
}

// pickVictim chooses the broker to kill: every third kill the controller,
// every third a partition leader, otherwise any broker, so that both roles
// are hit whatever the random draws.
func pickVictim(i int, rng *rand.Rand, m kadm.Metadata, ids []int32) int32 {
	switch i % 3 {
	case 0:
		if slices.Contains(ids, m.Controller) {
			return m.Controller
		}
	case 1:
		var leaders []int32
		for _, p := range m.Topics[chaosTopic].Partitions.Sorted() {
			if slices.Contains(ids, p.Leader) {
				leaders = append(leaders, p.Leader)
			}
		}
		if len(leaders) > 0 {
			return leaders[rng.IntN(len(leaders))]
		}
	}
	return ids[rng.IntN(len(ids))]
}

// leaderships counts the partitions of the chaos topic that id leads.
func leaderships(m kadm.Metadata, id int32) int {
	n := 0
	for _, p := range m.Topics[chaosTopic].Partitions {
		if p.Leader == id {
			n++
		}
	}
	return n
}

// waitProgress waits until n more records than now are acknowledged.
func waitProgress(ctx context.Context, prod *chaoscheck.Producer, n int, timeout time.Duration) error {
	want := prod.AckedCount() + n
	return poll(ctx, timeout, func(context.Context) error {
		if got := prod.AckedCount(); got < want {
			return fmt.Errorf("%d of %d records acknowledged", got, want)
		}
		return nil
	})
}

// highWatermarks lists every partition's high watermark.
func highWatermarks(ctx context.Context, t *testing.T, adm *kadm.Client) map[int32]int64 {
	t.Helper()
	var ends map[int32]int64
	if err := poll(ctx, time.Minute, func(ctx context.Context) error {
		lo, err := adm.ListEndOffsets(ctx, chaosTopic)
		if err != nil {
			return err
		}
		if err := lo.Error(); err != nil {
			return err
		}
		ends = map[int32]int64{}
		lo.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
		return nil
	}); err != nil {
		t.Fatalf("high watermarks: %v", err)
	}
	return ends
}

// compareReplicasAfterShutdown stops every broker with SIGTERM, one after
// the other, and checks that all replicas of each partition hold
// byte-identical batches up to the high watermark taken before.
func compareReplicasAfterShutdown(ctx context.Context, t *testing.T, c *cluster, adm *kadm.Client, topic string, partitions int32) {
	t.Helper()
	ends := highWatermarks(ctx, t, adm)
	for _, id := range c.ids() {
		if err := c.terminate(id, time.Minute); err != nil {
			t.Errorf("clean shutdown of broker %d: %v", id, err)
		}
	}
	for p := int32(0); p < partitions; p++ {
		var first []chaoscheck.RawBatch
		var firstID int32
		for _, id := range c.ids() {
			dir := fmt.Sprintf("%s/%s-%d", c.logDir(id), topic, p)
			batches, err := chaoscheck.ReadBatches(dir, ends[p])
			if err != nil {
				t.Errorf("%s-%d on broker %d: %v", topic, p, id, err)
				continue
			}
			if first == nil {
				first, firstID = batches, id
				continue
			}
			if d := chaoscheck.DiffBatches(first, batches); d != "" {
				t.Errorf("%s-%d: replicas on brokers %d and %d differ below the high watermark %d: %s", topic, p, firstID, id, ends[p], d)
			}
		}
		t.Logf("%s-%d: %d batches up to offset %d compared", topic, p, len(first), ends[p])
	}
}
