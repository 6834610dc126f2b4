package netns

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ktoolhq/ktool/internal/chaoscheck"
	"github.com/ktoolhq/ktool/internal/nethost"
)

const (
	topic      = "netns"
	partitions = 6
	// txnTopic carries the transactional workload.
	txnTopic      = "netns-txn"
	txnPartitions = 3
	group         = "netns-group"
	// faultLen is how long a network fault lasts: past the session timeout,
	// so that a broker cut from ZooKeeper loses its session.
	faultLen = sessionTimeout + 2*time.Second
	// linkFaultLen is how long a fault lasts that leaves every broker
	// reaching ZooKeeper (cuts and loss between brokers, delays): no session
	// is to expire, so it only outlasts replica.lag.time.max.ms (3 s) and
	// one more ISR check (half of it), so that the ISRs shrink.
	linkFaultLen = 5 * time.Second
	// quorumLossLen is how long the ZooKeeper quorum is lost: well past the
	// session timeout, which must not expire any session meanwhile.
	quorumLossLen = 2 * sessionTimeout
)

// run is the state of TestNetFaults shared by the faults.
type run struct {
	t    *testing.T
	c    *netCluster
	adm  *kadm.Client
	prod *chaoscheck.Producer
	txn  *chaoscheck.Txn
	rng  *rand.Rand
	// probes counts the topics created to time the controller's recovery.
	probes int
	// recoveries are the controller's recovery times after a quorum loss.
	recoveries []time.Duration
	// resumed are the times acknowledgements took to resume after a quorum
	// loss with a frozen follower (the ISR shrink written at last).
	resumed []time.Duration
}

// netFault is one kind of fault. apply injects it, lasts it out and heals
// it; it may check what must hold during the fault and return a violation.
type netFault struct {
	name  string
	apply func(ctx context.Context, r *run, m kadm.Metadata) (victim string, err error)
}

// errViolation marks an error of apply that is a broken guarantee rather
// than a failure of the harness.
var errViolation = errors.New("violation")

func netFaults() []netFault {
	return []netFault{
		{"isolate a leader", func(ctx context.Context, r *run, m kadm.Metadata) (string, error) {
			v := r.leader(m)
			return brokerName(v, m), r.hold(ctx, func() error { return r.c.lab.Isolate(r.c.host[v]) }, faultLen)
		}},
		{"isolate the controller", func(ctx context.Context, r *run, m kadm.Metadata) (string, error) {
			v := r.controller(m)
			return brokerName(v, m), r.hold(ctx, func() error { return r.c.lab.Isolate(r.c.host[v]) }, faultLen)
		}},
		{"cut a leader from its followers", func(ctx context.Context, r *run, m kadm.Metadata) (string, error) {
			v := r.leader(m)
			return brokerName(v, m), r.hold(ctx, func() error {
				return r.c.lab.Partition(r.c.brokerHosts(v), r.c.brokerHosts(r.c.otherBrokers(v)...))
			}, linkFaultLen)
		}},
		{"cut a follower from ZooKeeper", cutFollowerFromZooKeeper},
		// The split Jepsen found in 2013: the clients still reach the leader,
		// but it reaches neither ZooKeeper nor its followers. It must not
		// acknowledge anything alone; a follower takes over once its session
		// expires.
		{"cut a leader from ZooKeeper and its followers", func(ctx context.Context, r *run, m kadm.Metadata) (string, error) {
			v := r.leader(m)
			return brokerName(v, m), r.hold(ctx, func() error {
				return r.c.lab.Partition(r.c.brokerHosts(v), append(r.c.brokerHosts(r.c.otherBrokers(v)...), r.c.zkHost...))
			}, faultLen)
		}},
		{"one way: leader to followers", func(ctx context.Context, r *run, m kadm.Metadata) (string, error) {
			v := r.leader(m)
			return brokerName(v, m), r.hold(ctx, func() error {
				return r.c.lab.Cut(r.c.brokerHosts(v), r.c.brokerHosts(r.c.otherBrokers(v)...))
			}, linkFaultLen)
		}},
		{"one way: followers to leader", func(ctx context.Context, r *run, m kadm.Metadata) (string, error) {
			v := r.leader(m)
			return brokerName(v, m), r.hold(ctx, func() error {
				return r.c.lab.Cut(r.c.brokerHosts(r.c.otherBrokers(v)...), r.c.brokerHosts(v))
			}, linkFaultLen)
		}},
		{"30% packet loss at a leader", func(ctx context.Context, r *run, m kadm.Metadata) (string, error) {
			v := r.leader(m)
			return brokerName(v, m), r.hold(ctx, func() error { return r.c.lab.Loss(r.c.host[v], 30) }, faultLen)
		}},
		{"20% packet loss between a leader and a follower", func(ctx context.Context, r *run, m kadm.Metadata) (string, error) {
			v := r.leader(m)
			f := r.otherBroker(v)
			return fmt.Sprintf("%s; follower %d", brokerName(v, m), f), r.hold(ctx, func() error {
				return r.c.lab.LinkLoss(r.c.host[v], r.c.host[f], 20)
			}, linkFaultLen)
		}},
		{"delay and reorder at a leader", delayLeader(false)},
		{"delay and reorder between a leader and a follower", delayLeader(true)},
		{"kill the ZooKeeper leader", killZkLeader},
		{"isolate the ZooKeeper leader", isolateZkLeader},
		{"lose the ZooKeeper quorum", loseQuorum},
		{"lose the ZooKeeper quorum, freeze a follower", loseQuorumFreezeFollower},
	}
}

// netDelay is the delay of the delay kinds: with the jitter, packets sent
// less than 100 ms apart are reordered.
var netDelay = nethost.Delay{Base: 100 * time.Millisecond, Jitter: 50 * time.Millisecond}

// delayLeader delays what a leader sends (link: only what it and one
// follower send each other), in user space (nethost.Delay: this kernel,
// like many, has no tc netem).
func delayLeader(link bool) func(ctx context.Context, r *run, m kadm.Metadata) (string, error) {
	return func(ctx context.Context, r *run, m kadm.Metadata) (string, error) {
		v := r.leader(m)
		what := fmt.Sprintf("%s, %v", brokerName(v, m), netDelay)
		apply := func() error { return r.c.lab.Delay(r.c.host[v], netDelay) }
		if link {
			f := r.otherBroker(v)
			what += fmt.Sprintf(" both ways with follower %d", f)
			apply = func() error {
				if err := r.c.lab.Delay(r.c.host[v], netDelay, r.c.host[f]); err != nil {
					return err
				}
				return r.c.lab.Delay(r.c.host[f], netDelay, r.c.host[v])
			}
		}
		from := r.c.lab.Delayed()
		if err := r.hold(ctx, apply, linkFaultLen); err != nil {
			return what, err
		}
		n := r.c.lab.Delayed() - from
		if n == 0 {
			return what, errors.New("no packet was delayed")
		}
		return fmt.Sprintf("%s; %d packets delayed", what, n), nil
	}
}

// otherBroker picks a broker other than id.
func (r *run) otherBroker(id int32) int32 {
	o := r.c.otherBrokers(id)
	return o[r.rng.IntN(len(o))]
}

// hold applies a fault, waits d and heals it.
func (r *run) hold(ctx context.Context, apply func() error, d time.Duration) error {
	if err := apply(); err != nil {
		r.c.lab.Heal()
		return err
	}
	sleep(ctx, d)
	return r.c.lab.Heal()
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func brokerName(id int32, m kadm.Metadata) string {
	s := fmt.Sprintf("broker %d, leader of %d partitions", id, leaderships(m, id))
	if m.Controller == id {
		s += ", controller"
	}
	return s
}

func leaderships(m kadm.Metadata, id int32) int {
	n := 0
	for _, p := range m.Topics[topic].Partitions {
		if p.Leader == id {
			n++
		}
	}
	return n
}

// leader picks a broker that leads partitions, the controller only when no
// other does.
func (r *run) leader(m kadm.Metadata) int32 {
	var ls []int32
	for _, p := range m.Topics[topic].Partitions.Sorted() {
		if p.Leader >= 0 && p.Leader != m.Controller && !slices.Contains(ls, p.Leader) {
			ls = append(ls, p.Leader)
		}
	}
	if len(ls) == 0 {
		return r.controller(m)
	}
	return ls[r.rng.IntN(len(ls))]
}

func (r *run) controller(m kadm.Metadata) int32 {
	if m.Controller > 0 {
		return m.Controller
	}
	ids := r.c.ids()
	return ids[r.rng.IntN(len(ids))]
}

// follower picks a broker that is not the controller.
func (r *run) follower(m kadm.Metadata) int32 {
	var fs []int32
	for _, id := range r.c.ids() {
		if id != m.Controller {
			fs = append(fs, id)
		}
	}
	return fs[r.rng.IntN(len(fs))]
}

func (r *run) zkLeader(ctx context.Context) (int, error) {
	var id int
	err := poll(ctx, 30*time.Second, func(context.Context) error {
		var err error
		id, err = r.c.zk.Leader()
		return err
	})
	return id, err
}

func (r *run) zkState(ctx context.Context) (zkState, error) {
	var st zkState
	err := poll(ctx, 30*time.Second, func(ctx context.Context) error {
		var err error
		st, err = r.c.readZkState(ctx, map[string]int32{topic: partitions})
		return err
	})
	return st, err
}

// sameControlPlane is a violation when the control plane changed between
// before and now: a session expired, or the controller or a leader moved.
func (r *run) sameControlPlane(ctx context.Context, before zkState, what string) error {
	after, err := r.zkState(ctx)
	if err != nil {
		return err
	}
	if !before.equal(after) {
		return fmt.Errorf("%w: %s changed the control plane without any session expiring:\nbefore %v\nafter  %v", errViolation, what, before, after)
	}
	return nil
}

// cutFollowerFromZooKeeper cuts a broker that is not the controller from
// every ZooKeeper node while it still reaches the other brokers, longer than
// its session timeout: its session must expire (it registers again with a
// new broker epoch once healed), and it must then rejoin the ISRs.
func cutFollowerFromZooKeeper(ctx context.Context, r *run, m kadm.Metadata) (string, error) {
	v := r.follower(m)
	before, err := r.zkState(ctx)
	if err != nil {
		return "", err
	}
	if err := r.hold(ctx, func() error { return r.c.lab.Partition(r.c.brokerHosts(v), r.c.zkHost) }, faultLen); err != nil {
		return brokerName(v, m), err
	}
	var after zkState
	if err := poll(ctx, time.Minute, func(ctx context.Context) error {
		var err error
		after, err = r.c.readZkState(ctx, map[string]int32{topic: partitions})
		if err == nil && after.brokerEpochs[v] == before.brokerEpochs[v] {
			err = fmt.Errorf("broker %d still has broker epoch %d", v, before.brokerEpochs[v])
		}
		return err
	}); err != nil {
		return brokerName(v, m), fmt.Errorf("the cut did not end broker %d's session, or it did not register again: %w", v, err)
	}
	return brokerName(v, m), nil
}

// killZkLeader SIGKILLs the ZooKeeper node that leads the ensemble: the
// brokers' sessions move to the other nodes, and nothing in the cluster may
// change (no session expires within the session timeout).
func killZkLeader(ctx context.Context, r *run, m kadm.Metadata) (string, error) {
	before, err := r.zkState(ctx)
	if err != nil {
		return "", err
	}
	id, err := r.zkLeader(ctx)
	if err != nil {
		return "", err
	}
	node := r.c.zk.Node(id)
	node.Kill()
	next, err := r.zkLeader(ctx)
	if err != nil {
		return "", fmt.Errorf("no new ZooKeeper leader after killing node %d: %w", id, err)
	}
	sleep(ctx, faultLen)
	if err := r.c.zk.Launch(id); err != nil {
		return "", err
	}
	if err := r.c.zk.Wait(id); err != nil {
		return "", err
	}
	return fmt.Sprintf("ZooKeeper node %d (node %d leads now)", id, next), r.sameControlPlane(ctx, before, "killing the ZooKeeper leader")
}

// isolateZkLeader cuts the ZooKeeper leader from every other host.
func isolateZkLeader(ctx context.Context, r *run, m kadm.Metadata) (string, error) {
	before, err := r.zkState(ctx)
	if err != nil {
		return "", err
	}
	id, err := r.zkLeader(ctx)
	if err != nil {
		return "", err
	}
	if err := r.hold(ctx, func() error { return r.c.lab.Isolate(r.c.zkHost[id-1]) }, faultLen); err != nil {
		return "", err
	}
	return fmt.Sprintf("ZooKeeper node %d", id), r.sameControlPlane(ctx, before, "isolating the ZooKeeper leader")
}

// cutQuorum isolates two of the three ZooKeeper nodes, the leader among
// them, so that no node has a quorum.
func (r *run) cutQuorum(ctx context.Context) (string, error) {
	id, err := r.zkLeader(ctx)
	if err != nil {
		return "", err
	}
	other := id%3 + 1
	for _, n := range []int{id, other} {
		if err := r.c.lab.Isolate(r.c.zkHost[n-1]); err != nil {
			r.c.lab.Heal()
			return "", err
		}
	}
	return fmt.Sprintf("ZooKeeper nodes %d (leader) and %d isolated", id, other), nil
}

// controllerRecovered times, from now, until the controller acts again: a
// new topic gets leaders and full ISRs.
func (r *run) controllerRecovered(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	r.probes++
	probe := fmt.Sprintf("probe-%d", r.probes)
	err := poll(ctx, 2*time.Minute, func(ctx context.Context) error {
		resp, err := r.adm.CreateTopic(ctx, 1, 3, nil, probe)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS") {
			return err
		}
		return r.c.fullISR(ctx, probe, 1)
	})
	return time.Since(start), err
}

// loseQuorum takes the quorum away for quorumLossLen: the brokers keep
// serving their leaderships (acks go on: no ISR needs to change), no session
// expires, and once the quorum is back the controller acts again.
func loseQuorum(ctx context.Context, r *run, m kadm.Metadata) (string, error) {
	before, err := r.zkState(ctx)
	if err != nil {
		return "", err
	}
	what, err := r.cutQuorum(ctx)
	if err != nil {
		return "", err
	}
	sleep(ctx, time.Second)
	from := r.prod.AckedCount()
	sleep(ctx, quorumLossLen-time.Second)
	acked := r.prod.AckedCount() - from
	if err := r.c.lab.Heal(); err != nil {
		return what, err
	}
	took, err := r.controllerRecovered(ctx)
	if err != nil {
		return what, fmt.Errorf("controller did not recover from the quorum loss: %w", err)
	}
	r.recoveries = append(r.recoveries, took)
	what += fmt.Sprintf("; %d records acknowledged without a quorum; controller acted %v after the quorum returned", acked, took.Round(time.Millisecond))
	if acked < 100 {
		return what, fmt.Errorf("%w: only %d records acknowledged in %v without a ZooKeeper quorum: the brokers must keep serving their leaderships", errViolation, acked, quorumLossLen-time.Second)
	}
	return what, r.sameControlPlane(ctx, before, "losing the ZooKeeper quorum")
}

// loseQuorumFreezeFollower takes the quorum away and freezes a broker that
// is not the controller (SIGSTOP): every partition has it in its ISR, and
// no leader may drop it from the ISR without writing that to ZooKeeper, so
// no record it does not hold (at or past its log end while frozen, read
// from its files) may be acknowledged (acks=all) until the quorum is back. The
// check is on offsets, not on time: a response in flight at the freeze, or
// a callback run late on a loaded machine, is not a violation. Then the
// ISRs shrink, acknowledgements resume, and the broker is let go.
func loseQuorumFreezeFollower(ctx context.Context, r *run, m kadm.Metadata) (string, error) {
	v := r.follower(m)
	what, err := r.cutQuorum(ctx)
	if err != nil {
		return "", err
	}
	what = brokerName(v, m) + " frozen; " + what
	b := r.c.brokers[v]
	if err := b.Signal(syscall.SIGSTOP); err != nil {
		r.c.lab.Heal()
		return what, err
	}
	defer b.Signal(syscall.SIGCONT)
	from := r.prod.AckedCount()
	// Longer than replica.lag.time.max.ms (3 s) plus the time a leader
	// waits for its ISR write (10 s): a leader that dropped the frozen
	// follower from the ISR without ZooKeeper would ack again.
	sleep(ctx, 17*time.Second)
	acks, _ := r.prod.Acked()
	// Read only now: kill(2) returns before every thread of the broker has
	// stopped, and a write running at the freeze still lands (seen: a log
	// end read at once was one record short of an acknowledgement).
	ends := map[int32]int64{}
	for p := int32(0); p < partitions; p++ {
		end, err := chaoscheck.LogEnd(fmt.Sprintf("%s/%s-%d", r.c.logDir(v), topic, p))
		if err != nil {
			r.c.lab.Heal()
			return what, fmt.Errorf("log end of the frozen broker %d: %w", v, err)
		}
		ends[p] = end
	}
	if err := r.c.lab.Heal(); err != nil {
		return what, err
	}
	healed := time.Now()
	var beyond []string
	for p, as := range acks {
		for i := len(as) - 1; i >= 0 && as[i].Offset >= ends[p]; i-- {
			beyond = append(beyond, fmt.Sprintf("%d@%d", p, as[i].Offset))
		}
	}
	what += fmt.Sprintf("; %d records acknowledged after the freeze; the frozen log ends %v", r.prod.AckedCount()-from, ends)
	if len(beyond) > 0 {
		return what, fmt.Errorf("%w: %d records acknowledged that the frozen broker %d does not hold (partition@offset %v) while no ISR change could be written", errViolation, len(beyond), v, beyond[:min(len(beyond), 20)])
	}
	if err := waitProgress(ctx, r.prod, 100, 2*time.Minute); err != nil {
		return what, fmt.Errorf("no acknowledgements after the quorum returned, with broker %d frozen: %w", v, err)
	}
	r.resumed = append(r.resumed, time.Since(healed))
	what += fmt.Sprintf("; acks resumed %v after the quorum returned", time.Since(healed).Round(time.Millisecond))
	return what, b.Signal(syscall.SIGCONT)
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

// TestNetFaults runs a 3-broker cluster on a 3-node ZooKeeper ensemble, each
// on its own host, under every network fault kind in turn (netFaults), with
// the idempotent acks=all producer, a live consumer and a consumer group of
// three members (one replaced every 20 s) and a transactional producer
// (committing two transactions, aborting the third) with a read_committed
// consumer running throughout. After each fault is healed every ISR must be
// full again, the producer must make progress, the last stable offsets must
// move on and a transaction must commit. At the end it checks what
// chaoscheck checks (nothing acknowledged lost, duplicated, reordered or
// rewritten, no consumer rewind, every record processed by the group, no
// partition owned twice in a generation, no committed offset going back; no
// aborted record read committed, no transaction read in part, every
// acknowledged commit read, the last stable offset at the high watermark)
// and that all replicas hold the same batches after a clean shutdown. It reports the worst time without
// an acknowledgement per fault kind and the controller's recovery time after
// losing the ZooKeeper quorum.
//
// CI runs each kind once; the long run mixes the kinds at random, and stops
// injecting faults after KTOOL_NETNS_MINUTES; KTOOL_NETNS_ONLY=TEXT runs only
// the kinds whose name holds TEXT, KTOOL_NETNS_SEED replays a run's choices:
//
//	KTOOL_NETNS_FAULTS=100 KTOOL_NETNS_MINUTES=35 go test ./test/netns -run TestNetFaults -v -timeout 60m
func TestNetFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-host fault test: minutes long; runs without -short")
	}
	kinds := netFaults()
	if only := os.Getenv("KTOOL_NETNS_ONLY"); only != "" {
		kinds = slices.DeleteFunc(kinds, func(f netFault) bool { return !strings.Contains(f.name, only) })
		if len(kinds) == 0 {
			t.Fatalf("KTOOL_NETNS_ONLY=%q matches no fault kind", only)
		}
	}
	faults := int(envInt(t, "KTOOL_NETNS_FAULTS", int64(len(kinds))))
	budget := time.Duration(envInt(t, "KTOOL_NETNS_MINUTES", int64(faults)+5)) * time.Minute
	seed := uint64(envInt(t, "KTOOL_NETNS_SEED", time.Now().UnixNano()))
	t.Logf("%d faults within %v, KTOOL_NETNS_SEED=%d", faults, budget, seed)
	deadline := time.Now().Add(budget)
	ctx, cancel := context.WithTimeout(context.Background(), budget+5*time.Minute)
	defer cancel()

	c := newNetCluster(t, 3)
	r := &run{t: t, c: c, adm: c.admin(), rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	for name, n := range map[string]int32{topic: partitions, txnTopic: txnPartitions} {
		if err := c.createTopic(ctx, name, n, 3); err != nil {
			t.Fatal(err)
		}
	}
	acks := chaoscheck.NewGapTracker()
	r.prod = chaoscheck.NewProducer(c.newClient, topic, partitions, 3*time.Minute)
	r.prod.OnAck = acks.Ack
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { r.prod.Run(stop, 5*time.Millisecond) })
	stopProducing := sync.OnceFunc(func() {
		close(stop)
		wg.Wait()
	})
	t.Cleanup(stopProducing)
	if err := waitProgress(ctx, r.prod, 500, time.Minute); err != nil {
		t.Fatalf("producer never got going: %v\n%s", err, r.prod.Summary())
	}
	live := chaoscheck.NewLiveConsumer(c.newClient, topic, partitions)
	grp := chaoscheck.NewGroup(c.newClient, group, topic)
	wctx, stopWorkers := context.WithCancel(ctx)
	var workers sync.WaitGroup
	workers.Go(func() { live.Run(wctx) })
	r.txn = chaoscheck.NewTxn(c.newClient, txnTopic, txnPartitions, "netns-txn")
	tctx, stopTxns := context.WithCancel(ctx)
	var txnWG sync.WaitGroup
	txnWG.Go(func() { r.txn.Produce(tctx) })
	stopTxnProducer := sync.OnceFunc(func() {
		stopTxns()
		txnWG.Wait()
	})
	t.Cleanup(stopTxnProducer)
	workers.Go(func() { r.txn.Consume(wctx) })
	var groupWG sync.WaitGroup
	gctx, stopGroup := context.WithCancel(ctx)
	groupWG.Go(func() { grp.Run(gctx, 3, 20*time.Second) })
	stopAll := sync.OnceFunc(func() {
		stopWorkers()
		workers.Wait()
		stopGroup()
		groupWG.Wait()
	})
	t.Cleanup(stopAll)

	var order []int
	done := 0
	for i := 0; i < faults && !t.Failed(); i++ {
		if time.Now().After(deadline) {
			t.Logf("time budget of %v used up after %d faults", budget, done)
			break
		}
		if len(order) == 0 {
			order = r.rng.Perm(len(kinds))
			if faults <= len(kinds) {
				order = slices.Sorted(slices.Values(order))
			}
		}
		f := kinds[order[0]]
		order = order[1:]
		m, err := r.adm.Metadata(ctx, topic)
		if err != nil {
			t.Errorf("fault %d: metadata: %v", i+1, err)
			break
		}
		w := acks.Begin(i+1, f.name, "")
		start := time.Now()
		what, err := f.apply(ctx, r, m)
		over := time.Since(start)
		if err != nil {
			c.lab.Heal()
			t.Errorf("fault %d (%s, %s): %v", i+1, f.name, what, err)
			if !errors.Is(err, errViolation) {
				break
			}
		}
		if err := poll(ctx, 2*time.Minute, func(ctx context.Context) error {
			if err := c.fullISR(ctx, topic, partitions); err != nil {
				return err
			}
			return c.fullISR(ctx, txnTopic, txnPartitions)
		}); err != nil {
			t.Errorf("fault %d (%s, %s): ISRs not full again after heal: %v", i+1, f.name, what, err)
			break
		}
		healed := time.Since(start)
		// The producer goes on and no transaction hangs (the last stable
		// offsets move on, the producer commits again): independent waits
		// on the healed cluster, run at once.
		var checks sync.WaitGroup
		stalled := make([]error, 3)
		checks.Go(func() {
			if err := waitProgress(ctx, r.prod, 300, time.Minute); err != nil {
				stalled[0] = fmt.Errorf("producer stalled after heal: %w\n%s", err, r.prod.Summary())
			}
		})
		checks.Go(func() {
			if err := chaoscheck.LSOAdvances(ctx, r.adm, txnTopic, time.Minute); err != nil {
				stalled[1] = fmt.Errorf("the last stable offset does not advance after heal: %w\n%s", err, r.txn.Summary())
			}
		})
		checks.Go(func() {
			if err := waitCommits(ctx, r.txn, 1, time.Minute); err != nil {
				stalled[2] = fmt.Errorf("no transaction committed after heal: %w\n%s", err, r.txn.Summary())
			}
		})
		checks.Wait()
		if err := errors.Join(stalled...); err != nil {
			t.Errorf("fault %d (%s, %s): %v", i+1, f.name, what, err)
			break
		}
		done++
		worst, p := acks.Worst(w)
		t.Logf("fault %d/%d: %s (%s): over after %v, ISRs full after %v, transactions going after %v; worst gap without an acknowledgement %v (partition %d); %d acknowledged",
			i+1, faults, f.name, what, over.Round(time.Millisecond), healed.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), worst.Round(time.Millisecond), p, r.prod.AckedCount())
	}
	t.Logf("%d faults survived", done)
	t.Logf("worst time a partition had no acknowledgement, per fault kind:\n%s", chaoscheck.FormatGaps(acks.ByKind()))
	if len(r.recoveries) > 0 {
		t.Logf("controller recovery after the ZooKeeper quorum returned (a new topic led, ISRs full): worst %v over %d quorum losses",
			slices.Max(r.recoveries).Round(time.Millisecond), len(r.recoveries))
	}
	if len(r.resumed) > 0 {
		t.Logf("acknowledgements resumed after the quorum returned with a follower frozen (ISR shrink written): worst %v over %d",
			slices.Max(r.resumed).Round(time.Millisecond), len(r.resumed))
	}
	verify(ctx, t, r, grp, live, stopProducing, stopTxnProducer, stopAll)
}

// waitCommits waits until n more transactions than now are committed.
func waitCommits(ctx context.Context, txn *chaoscheck.Txn, n int, timeout time.Duration) error {
	want := txn.Committed() + n
	return poll(ctx, timeout, func(context.Context) error {
		if got := txn.Committed(); got < want {
			return fmt.Errorf("%d of %d transactions committed", got, want)
		}
		return nil
	})
}

// verify stops the workloads and checks the run.
func verify(ctx context.Context, t *testing.T, r *run, grp *chaoscheck.Group, live *chaoscheck.LiveConsumer, stopProducing, stopTxnProducer, stopAll func()) {
	t.Helper()
	c := r.c
	stopProducing()
	stopTxnProducer()
	fctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	if err := r.prod.Flush(fctx); err != nil {
		t.Errorf("flushing the producer: %v", err)
	}
	t.Logf("producer: %s", r.prod.Summary())
	acked, lost := r.prod.Acked()
	if len(lost) > 0 {
		t.Errorf("the producer detected data loss on %v", lost)
	}
	if err := poll(ctx, 2*time.Minute, func(ctx context.Context) error { return c.fullISR(ctx, topic, partitions) }); err != nil {
		t.Fatalf("ISRs not full after the run: %v", err)
	}
	ends := highWatermarks(ctx, t, r.adm)
	if err := poll(ctx, 3*time.Minute, func(context.Context) error { return grp.CaughtUp(ends) }); err != nil {
		t.Errorf("the consumer group did not commit up to the end: %v\n%s", err, grp.Summary())
	}
	read, err := chaoscheck.ReadBack(ctx, c.newClient, topic, ends)
	if err != nil {
		t.Fatal(err)
	}
	// Once the transactional producer stopped, its last transaction ends
	// (its timeout aborts it) and the consumer reads every commit.
	if err := chaoscheck.LSOAtEnd(ctx, r.adm, txnTopic, time.Minute); err != nil {
		t.Errorf("a transaction hangs after the run: %v", err)
	}
	if err := poll(ctx, time.Minute, func(context.Context) error { return r.txn.AllCommittedRead() }); err != nil {
		t.Errorf("the read_committed consumer did not read every committed transaction: %v", err)
	}
	stopAll()
	problems := chaoscheck.CheckAcked(acked, read)
	tp := r.txn.Check()
	problems = append(problems, tp...)
	t.Logf("transactions: %s; %d violations", r.txn.Summary(), len(tp))
	lv, lcount, lerrs := live.Report()
	problems = append(problems, lv...)
	problems = append(problems, live.CompareFinal(read)...)
	gp := grp.Check(read)
	problems = append(problems, gp...)
	t.Logf("live consumer: %d records read, %d violations, fetch errors %v", lcount, len(lv), lerrs)
	t.Logf("consumer group: %s", grp.Summary())
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
	t.Logf("read back %d records up to the high watermarks %v: %d violations", total, ends, len(problems))
	compareReplicas(ctx, t, r, ends)
}

func highWatermarks(ctx context.Context, t *testing.T, adm *kadm.Client) map[int32]int64 {
	t.Helper()
	var ends map[int32]int64
	if err := poll(ctx, time.Minute, func(ctx context.Context) error {
		lo, err := adm.ListEndOffsets(ctx, topic)
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

// compareReplicas stops every broker with SIGTERM and checks that all
// replicas of each partition hold byte-identical batches below the high
// watermark.
func compareReplicas(ctx context.Context, t *testing.T, r *run, ends map[int32]int64) {
	t.Helper()
	c := r.c
	for _, id := range c.ids() {
		if err := c.brokers[id].Terminate(time.Minute); err != nil {
			t.Errorf("clean shutdown of broker %d: %v", id, err)
		}
	}
	for p := int32(0); p < partitions; p++ {
		var first []chaoscheck.RawBatch
		var firstID int32
		for _, id := range c.ids() {
			batches, err := chaoscheck.ReadBatches(fmt.Sprintf("%s/%s-%d", c.logDir(id), topic, p), ends[p])
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
	}
}
