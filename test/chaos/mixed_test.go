package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ktoolhq/ktool/internal/chaoscheck"
)

// sessionTimeout is zookeeper.session.timeout.ms of the chaos brokers.
const sessionTimeout = 6 * time.Second

// gapBound is the longest a partition may go without a serving leader after a
// fault while a majority of brokers and ZooKeeper are reachable: the session
// timeout (the time ZooKeeper takes to notice a broker is gone) plus 2 s.
const gapBound = sessionTimeout + 2*time.Second

// mixedFault is one kind of fault of TestMixedFaults.
type mixedFault struct {
	name string
	// victim picks the broker to hit from the metadata.
	victim func(rng *rand.Rand, m kadm.Metadata, ids []int32) int32
	// apply hits victim and returns when the fault is over (the broker is
	// running and reachable again).
	apply func(t *testing.T, c *cluster, victim int32) error
}

func leaderVictim(rng *rand.Rand, m kadm.Metadata, ids []int32) int32 {
	var leaders []int32
	for _, p := range m.Topics[chaosTopic].Partitions.Sorted() {
		if slices.Contains(ids, p.Leader) {
			leaders = append(leaders, p.Leader)
		}
	}
	if len(leaders) == 0 {
		return ids[rng.IntN(len(ids))]
	}
	return leaders[rng.IntN(len(leaders))]
}

func controllerVictim(rng *rand.Rand, m kadm.Metadata, ids []int32) int32 {
	if slices.Contains(ids, m.Controller) {
		return m.Controller
	}
	return ids[rng.IntN(len(ids))]
}

// cutFor cuts the victim from ZooKeeper in mode for d, then lets it back.
func cutFor(mode proxyMode, d time.Duration) func(t *testing.T, c *cluster, victim int32) error {
	return func(t *testing.T, c *cluster, victim int32) error {
		c.cutZK(victim, mode)
		time.Sleep(d)
		c.cutZK(victim, proxyPass)
		return nil
	}
}

// mixedFaults are the fault kinds, hit in turn. Most cuts and pauses last
// past the session timeout, so that the session expires and the cluster must
// fail over; two are shorter, so that it must not. The SIGKILLed broker is
// restarted at once, before its old session expires.
var mixedFaults = []mixedFault{
	{"SIGKILL leader", leaderVictim, killRestart},
	{"SIGSTOP leader", leaderVictim, pauseFor(sessionTimeout + 3*time.Second)},
	{"ZK blackhole leader", leaderVictim, cutFor(proxyBlackhole, sessionTimeout+3*time.Second)},
	{"ZK reset leader", leaderVictim, cutFor(proxyReset, sessionTimeout+3*time.Second)},
	{"ZK blackhole controller", controllerVictim, cutFor(proxyBlackhole, sessionTimeout+3*time.Second)},
	{"ZK reset controller", controllerVictim, cutFor(proxyReset, sessionTimeout+3*time.Second)},
	{"SIGKILL controller", controllerVictim, killRestart},
	{"SIGSTOP controller", controllerVictim, pauseFor(sessionTimeout + 3*time.Second)},
	// Shorter than the session timeout: no failover, the leader resumes as
	// leader (or reconnects to ZooKeeper within its session).
	{"SIGSTOP leader 3 s", leaderVictim, pauseFor(3 * time.Second)},
	{"ZK blackhole leader 3 s", leaderVictim, cutFor(proxyBlackhole, 3*time.Second)},
}

func killRestart(t *testing.T, c *cluster, victim int32) error {
	c.kill(victim)
	c.start(victim)
	return c.awaitReady(victim)
}

func pauseFor(d time.Duration) func(t *testing.T, c *cluster, victim int32) error {
	return func(t *testing.T, c *cluster, victim int32) error {
		c.pause(victim)
		time.Sleep(d)
		c.resume(victim)
		return nil
	}
}

// TestMixedFaults hits a 3-broker cluster with every fault kind in turn
// (SIGKILL with an immediate restart, SIGSTOP/SIGCONT, and a cut from
// ZooKeeper only, as a silent blackhole and as a reset, of a partition leader
// and of the controller, and a short pause and cut of a leader) while an idempotent acks=all producer writes and a
// live consumer reads from the start. After each fault it waits until every
// ISR is full again. It checks everything verifyRun checks, and measures per
// fault kind the longest a partition went without a serving leader
// (servingMonitor) and without an acknowledgement. CI runs one fault of each kind; KTOOL_CHAOS_FAULTS=N runs N,
// and then a partition without a serving leader for longer than
// zookeeper.session.timeout.ms + 2 s fails the test (CI only reports it: two
// shared cores make its timing noisy).
//
//	KTOOL_CHAOS_FAULTS=100 go test ./test/chaos -run TestMixedFaults -v -timeout 60m
func TestMixedFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level chaos test: minutes long; runs without -short")
	}
	t.Parallel()
	faults := int(envInt(t, "KTOOL_CHAOS_FAULTS", int64(len(mixedFaults))))
	strict := faults > len(mixedFaults)
	seed := uint64(envInt(t, "KTOOL_CHAOS_SEED", time.Now().UnixNano()))
	t.Logf("%d faults, KTOOL_CHAOS_SEED=%d", faults, seed)
	ctx := testContext(t, time.Duration(faults)*time.Minute+5*time.Minute)

	c := newCluster(t, 3, "/chaos4")
	adm := c.admin()
	c.createTopic(ctx, chaosTopic, chaosPartitions, 3)

	serving := newServingMonitor(c, chaosTopic)
	monCtx, stopMonitor := context.WithCancel(ctx)
	var monWG sync.WaitGroup
	monWG.Go(func() { serving.run(monCtx) })
	defer func() {
		stopMonitor()
		monWG.Wait()
	}()
	acks := chaoscheck.NewGapTracker()
	prod := chaoscheck.NewProducer(c.client, chaosTopic, chaosPartitions, 3*time.Minute)
	prod.OnAck = acks.Ack
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
	for i := 0; i < faults && !t.Failed(); i++ {
		f := mixedFaults[i%len(mixedFaults)]
		m, err := adm.Metadata(ctx, chaosTopic)
		if err != nil {
			t.Errorf("fault %d: metadata: %v", i+1, err)
			break
		}
		victim := f.victim(rng, m, c.ids())
		role := fmt.Sprintf("broker %d, leader of %d partitions", victim, leaderships(m, victim))
		if m.Controller == victim {
			role += ", controller"
		}
		ws := serving.gaps.Begin(i+1, f.name, role)
		wa := acks.Begin(i+1, f.name, role)
		serving.faulting(victim)
		start := time.Now()
		if err := f.apply(t, c, victim); err != nil {
			t.Errorf("fault %d (%s, %s): %v", i+1, f.name, role, err)
			break
		}
		over := time.Since(start)
		serving.faulting(-1)
		if err := poll(ctx, 2*time.Minute, func(ctx context.Context) error {
			return c.fullISR(ctx, chaosTopic, chaosPartitions)
		}); err != nil {
			t.Errorf("fault %d (%s, %s): ISRs not full again: %v", i+1, f.name, role, err)
			break
		}
		healed := time.Since(start)
		if err := waitProgress(ctx, prod, 300, time.Minute); err != nil {
			t.Errorf("fault %d (%s, %s): producer stalled: %v\n%s", i+1, f.name, role, err, prod.Summary())
			break
		}
		sw, sp := serving.gaps.Worst(ws)
		aw, ap := acks.Worst(wa)
		t.Logf("fault %d/%d: %s (%s): over after %v, ISRs full after %v; worst gap without a serving leader %v (partition %d), without an acknowledgement %v (partition %d); %d acknowledged",
			i+1, faults, f.name, role, over.Round(time.Millisecond), healed.Round(time.Millisecond),
			sw.Round(time.Millisecond), sp, aw.Round(time.Millisecond), ap, prod.AckedCount())
	}
	stats := serving.gaps.ByKind()
	t.Logf("worst time a partition had no serving leader, per fault kind (bound %v):\n%s", gapBound, chaoscheck.FormatGaps(stats))
	t.Logf("worst time a partition had no acknowledgement, per fault kind (client view: includes its timeouts on a frozen broker):\n%s", chaoscheck.FormatGaps(acks.ByKind()))
	for _, s := range stats {
		if s.Worst > gapBound {
			if strict {
				t.Errorf("%s: partition %d had no serving leader for %v in fault %d, beyond %v", s.Kind, s.P, s.Worst.Round(time.Millisecond), s.Fault, gapBound)
			} else {
				t.Logf("NOTE %s: partition %d had no serving leader for %v in fault %d, beyond %v (reported, not failed, in the short run)", s.Kind, s.P, s.Worst.Round(time.Millisecond), s.Fault, gapBound)
			}
		}
	}
	verifyRun(ctx, t, c, adm, prod, stopProducing, live, stopConsuming)
}
