// Command failover measures how long partitions of a ktool (or Kafka)
// cluster in ZooKeeper mode go without a live leader when a broker dies or
// shuts down, for scripts/bench/cluster.sh:
//
//	failover zookeeper --dir D --port P   run ZooKeeper from the local installation until signalled
//	failover cluster --ktool BIN --dir D --zookeeper ADDR/chroot --brokers N [--override k=v]...
//	failover run --ktool BIN --dir D --zookeeper ADDR/chroot --partitions N --rounds R --out DIR [--override k=v]...
//	failover wait --brokers B --topic T --partitions N --live 3
//	failover measure --brokers B --zookeeper ADDR/chroot --topic T --mode kill|term [--pick controller|others] --pids 1=PID,2=PID
//
// cluster runs N ktool brokers (internal/brokerproc) until signalled,
// printing "brokers=host:port,..." once all are ready. run starts three,
// creates the topic and measures --rounds SIGKILL failovers of a broker that
// is not the controller, --rounds SIGKILL failovers of the controller and
// --rounds SIGTERM failovers, restarting the victim on its port and
// directories after each and restoring the preferred leaders; each round's
// results go to DIR/failover.<kill|killctl|term>.<round>. wait and measure work on any cluster,
// Kafka's too (measure signals the given pids).
//
// measure signals the broker leading the most partitions (or --victim; with
// --pick controller the controller, with --pick others the broker leading
// the most among the others: a dead controller's failover also waits for a
// new controller to load the cluster's state).
// With --mode kill (SIGKILL) it times the ZooKeeper session expiry of the
// victim (a watch on /brokers/ids/N firing NodeDeleted) and from there
// until every live broker's metadata gives every partition a live leader.
// With --mode term (SIGTERM, controlled shutdown) it times from the signal
// until no live broker's metadata names the victim as a leader. Both also
// time until every partition's leader answers ListOffsets (the leaders took
// over, not only were chosen). wait includes that too. Results are key=value
// lines on stdout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/zkinstall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "failover:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out, errOut io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: failover zookeeper|cluster|run|wait|measure [flags]")
	}
	switch args[0] {
	case "zookeeper":
		return runZooKeeper(ctx, args[1:], out, errOut)
	case "cluster":
		return runCluster(ctx, args[1:], out, errOut)
	case "run":
		return runRounds(ctx, args[1:], errOut)
	case "wait":
		return runWait(ctx, args[1:])
	case "measure":
		return runMeasure(ctx, args[1:], out, errOut)
	}
	return fmt.Errorf("unknown command %q: want zookeeper, cluster, run, wait or measure", args[0])
}

// runZooKeeper runs a standalone ZooKeeper on 127.0.0.1 until ctx ends,
// printing "ready" once it serves sessions.
func runZooKeeper(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("zookeeper", flag.ContinueOnError)
	dir := fs.String("dir", "", "data and config directory")
	port := fs.Int("port", 0, "client port on 127.0.0.1")
	tick := fs.Duration("tick", 500*time.Millisecond, "tickTime; sessions may last 2 to 20 ticks")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *port <= 0 {
		return errors.New("zookeeper: --dir and --port are required")
	}
	in, err := zkinstall.Find()
	if err != nil {
		return err
	}
	cmd, err := in.Command(ctx, zkinstall.Config{Dir: *dir, Port: *port, TickTime: *tick})
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = errOut, errOut
	if err := cmd.Start(); err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(*port)
	if err := until(ctx, time.Minute, 100*time.Millisecond, func(ctx context.Context) error {
		conn, _, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogInfo(false))
		if err != nil {
			return err
		}
		defer conn.Close()
		_, _, err = conn.Exists("/")
		return err
	}); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("zookeeper on %s: %w", addr, err)
	}
	fmt.Fprintln(out, "ready", addr)
	<-ctx.Done()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	return nil
}

// runWait waits until --live brokers are registered and every partition of
// the topic has a leader and ISR == replicas.
func runWait(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("wait", flag.ContinueOnError)
	brokers := fs.String("brokers", "", "bootstrap brokers host:port,...")
	topic := fs.String("topic", "", "topic")
	partitions := fs.Int("partitions", 0, "partitions the topic must have")
	live := fs.Int("live", 0, "brokers that must be alive")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *brokers == "" || *topic == "" || *partitions <= 0 {
		return errors.New("wait: --brokers, --topic and --partitions are required")
	}
	return waitTopic(ctx, strings.Split(*brokers, ","), *topic, *partitions, *live, false, *timeout)
}

// waitTopic waits until live brokers are registered and every partition of
// topic has a leader (its preferred replica, with preferred, in the metadata
// of every broker), ISR == replicas and a leader answering ListOffsets.
func waitTopic(ctx context.Context, brokers []string, topic string, partitions, live int, preferred bool, timeout time.Duration) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	return until(ctx, timeout, 100*time.Millisecond, func(ctx context.Context) error {
		m, err := metadata(ctx, cl, nil, topic)
		if err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
		if len(m.Brokers) < live {
			return fmt.Errorf("%d brokers alive, want %d", len(m.Brokers), live)
		}
		ps, err := topicPartitions(m, topic)
		if err != nil {
			return err
		}
		if len(ps) != partitions {
			return fmt.Errorf("%d partitions, want %d", len(ps), partitions)
		}
		for _, p := range ps {
			if p.Leader < 0 || !sameSet(p.ISR, p.Replicas) {
				return fmt.Errorf("partition %d: leader %d, isr %v, replicas %v", p.Partition, p.Leader, p.ISR, p.Replicas)
			}
		}
		if preferred {
			for _, b := range m.Brokers {
				id := b.NodeID
				bm, err := metadata(ctx, cl, &id, topic)
				if err != nil {
					return fmt.Errorf("metadata of broker %d: %w", id, err)
				}
				bps, err := topicPartitions(bm, topic)
				if err != nil {
					return err
				}
				for _, p := range bps {
					if len(p.Replicas) == 0 || p.Leader != p.Replicas[0] {
						return fmt.Errorf("broker %d: partition %d led by %d, not its preferred replica", id, p.Partition, p.Leader)
					}
				}
			}
		}
		return allServing(ctx, cl, topic, partitions)
	})
}

// allServing is nil when the leader of each of the want partitions of topic
// answers ListOffsets: the metadata names leaders as soon as the controller
// chose them, this is when they took over.
func allServing(ctx context.Context, cl *kgo.Client, topic string, want int) error {
	lo, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("list offsets: %w", err)
	}
	if err := lo.Error(); err != nil {
		return fmt.Errorf("list offsets: %w", err)
	}
	n := 0
	lo.Each(func(kadm.ListedOffset) { n++ })
	if n != want {
		return fmt.Errorf("%d of %d partitions listed", n, want)
	}
	return nil
}

type measureOptions struct {
	brokers   []string
	zookeeper string
	topic     string
	mode      string
	// candidates are the brokers that may be signalled; signal signals one.
	candidates []int32
	signal     func(id int32, sig syscall.Signal) error
	victim     int32
	// pick narrows the default victim: "controller", "others" (not the
	// controller) or "" (any broker).
	pick     string
	timeout  time.Duration
	interval time.Duration
}

func runMeasure(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("measure", flag.ContinueOnError)
	brokers := fs.String("brokers", "", "bootstrap brokers host:port,...")
	zkConnect := fs.String("zookeeper", "", "zookeeper.connect of the cluster, host:port[/chroot]")
	topic := fs.String("topic", "", "topic whose partitions are watched")
	mode := fs.String("mode", "kill", "kill (SIGKILL, session expiry) or term (SIGTERM, controlled shutdown)")
	pids := fs.String("pids", "", "broker processes: id=pid,...")
	victim := fs.Int("victim", -1, "broker to signal (default: the one leading the most partitions)")
	pick := fs.String("pick", "", "without --victim: controller (signal the controller) or others (the broker leading the most partitions among the others)")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up after")
	interval := fs.Duration("interval", 10*time.Millisecond, "metadata polling interval")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o := measureOptions{zookeeper: *zkConnect, topic: *topic, mode: *mode, victim: int32(*victim), pick: *pick, timeout: *timeout, interval: *interval}
	if *brokers == "" || o.zookeeper == "" || o.topic == "" || *pids == "" {
		return errors.New("measure: --brokers, --zookeeper, --topic and --pids are required")
	}
	if o.mode != "kill" && o.mode != "term" {
		return fmt.Errorf("measure: --mode %q: want kill or term", o.mode)
	}
	if o.pick != "" && o.pick != "controller" && o.pick != "others" {
		return fmt.Errorf("measure: --pick %q: want controller or others", o.pick)
	}
	o.brokers = strings.Split(*brokers, ",")
	byID := map[int32]int{}
	for _, kv := range strings.Split(*pids, ",") {
		k, v, ok := strings.Cut(kv, "=")
		id, err1 := strconv.Atoi(k)
		pid, err2 := strconv.Atoi(v)
		if !ok || err1 != nil || err2 != nil || pid <= 0 {
			return fmt.Errorf("measure: --pids entry %q: want id=pid", kv)
		}
		byID[int32(id)] = pid
		o.candidates = append(o.candidates, int32(id))
	}
	o.signal = func(id int32, sig syscall.Signal) error {
		pid := byID[id]
		if err := syscall.Kill(pid, sig); err != nil {
			return fmt.Errorf("signal pid %d: %w", pid, err)
		}
		return nil
	}
	_, err := measure(ctx, o, out, errOut)
	return err
}

// measure signals the victim and writes the timings to out; it returns the
// victim.
func measure(ctx context.Context, o measureOptions, out, errOut io.Writer) (int32, error) {
	// kgo refreshes metadata at most every 5 s by default, which would hide
	// how fast leaders take over.
	cl, err := kgo.NewClient(kgo.SeedBrokers(o.brokers...), kgo.MetadataMinAge(o.interval))
	if err != nil {
		return -1, err
	}
	defer cl.Close()
	m, err := metadata(ctx, cl, nil, o.topic)
	if err != nil {
		return -1, err
	}
	ps, err := topicPartitions(m, o.topic)
	if err != nil {
		return -1, err
	}
	led := map[int32]int{}
	for _, p := range ps {
		led[p.Leader]++
	}
	victim := o.victim
	switch {
	case victim >= 0:
	case o.pick == "controller":
		victim = m.ControllerID
	default:
		for _, id := range o.candidates {
			if o.pick == "others" && id == m.ControllerID {
				continue
			}
			if victim < 0 || led[id] > led[victim] || led[id] == led[victim] && id < victim {
				victim = id
			}
		}
	}
	if !slices.Contains(o.candidates, victim) {
		return -1, fmt.Errorf("broker %d cannot be signalled", victim)
	}
	var survivors []int32
	for _, b := range m.Brokers {
		if b.NodeID != victim {
			survivors = append(survivors, b.NodeID)
		}
	}
	if len(survivors) == 0 {
		return -1, errors.New("no broker would survive")
	}
	slices.Sort(survivors)

	server, chroot, _ := strings.Cut(o.zookeeper, "/")
	conn, _, err := zk.Connect([]string{server}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		return -1, err
	}
	defer conn.Close()
	znode := strings.TrimSuffix("/"+chroot, "/") + "/brokers/ids/" + strconv.Itoa(int(victim))
	exists, _, events, err := conn.ExistsW(znode)
	if err != nil {
		return -1, fmt.Errorf("watch %s: %w", znode, err)
	}
	if !exists {
		return -1, fmt.Errorf("%s does not exist: broker %d is not registered", znode, victim)
	}
	deregistered := make(chan time.Time, 1)
	go func() {
		for ev := range events {
			if ev.Type == zk.EventNodeDeleted {
				deregistered <- time.Now()
				return
			}
		}
	}()

	sig, sigName := syscall.SIGKILL, "SIGKILL"
	if o.mode == "term" {
		sig, sigName = syscall.SIGTERM, "SIGTERM"
	}
	fmt.Fprintf(errOut, "failover: %s to broker %d, leader of %d of %d partitions\n", sigName, victim, led[victim], len(ps))
	signalled := time.Now()
	if err := o.signal(victim, sig); err != nil {
		return -1, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	var gone time.Time
	if o.mode == "kill" {
		select {
		case gone = <-deregistered:
		case <-ctx.Done():
			return -1, fmt.Errorf("broker %d's session did not expire: %w", victim, ctx.Err())
		}
	}
	if err := until(ctx, o.timeout, o.interval, func(ctx context.Context) error {
		return allLed(ctx, cl, survivors, o.topic, len(ps), victim)
	}); err != nil {
		return -1, err
	}
	done := time.Now()
	if err := until(ctx, o.timeout, o.interval, func(ctx context.Context) error {
		return allServing(ctx, cl, o.topic, len(ps))
	}); err != nil {
		return -1, err
	}
	serving := time.Now()
	if o.mode == "term" {
		select {
		case gone = <-deregistered:
		case <-ctx.Done():
			return -1, fmt.Errorf("broker %d did not deregister after SIGTERM: %w", victim, ctx.Err())
		}
	}
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) }
	fmt.Fprintf(out, "mode=%s\nvictim=%d\ncontroller=%d\npartitions=%d\nvictim_leaders=%d\n", o.mode, victim, m.ControllerID, len(ps), led[victim])
	if o.mode == "kill" {
		fmt.Fprintf(out, "signal_to_expiry_ms=%s\nexpiry_to_all_led_ms=%s\nexpiry_to_all_serving_ms=%s\n",
			ms(gone.Sub(signalled)), ms(done.Sub(gone)), ms(serving.Sub(gone)))
	} else {
		fmt.Fprintf(out, "signal_to_none_led_ms=%s\nsignal_to_all_serving_ms=%s\nsignal_to_deregistered_ms=%s\n",
			ms(done.Sub(signalled)), ms(serving.Sub(signalled)), ms(gone.Sub(signalled)))
	}
	return victim, nil
}

// allLed is nil when every survivor's metadata gives all partitions of
// topic a leader that is alive and not victim.
func allLed(ctx context.Context, cl *kgo.Client, survivors []int32, topic string, want int, victim int32) error {
	for _, id := range survivors {
		m, err := metadata(ctx, cl, &id, topic)
		if err != nil {
			return fmt.Errorf("metadata of broker %d: %w", id, err)
		}
		ps, err := topicPartitions(m, topic)
		if err != nil {
			return err
		}
		if len(ps) != want {
			return fmt.Errorf("broker %d: %d partitions, want %d", id, len(ps), want)
		}
		live := map[int32]bool{}
		for _, b := range m.Brokers {
			live[b.NodeID] = true
		}
		for _, p := range ps {
			if p.Leader < 0 || p.Leader == victim || !live[p.Leader] {
				return fmt.Errorf("broker %d: partition %d led by %d", id, p.Partition, p.Leader)
			}
		}
	}
	return nil
}

// metadata asks broker (any broker when nil) for the metadata of topic.
func metadata(ctx context.Context, cl *kgo.Client, broker *int32, topic string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	if broker == nil {
		return req.RequestWith(ctx, cl)
	}
	return req.RequestWith(ctx, cl.Broker(int(*broker)))
}

func topicPartitions(m *kmsg.MetadataResponse, topic string) ([]kmsg.MetadataResponseTopicPartition, error) {
	for _, t := range m.Topics {
		if t.Topic != nil && *t.Topic == topic {
			if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
				return nil, fmt.Errorf("topic %s: %w", topic, err)
			}
			return t.Partitions, nil
		}
	}
	return nil, fmt.Errorf("topic %s not in the metadata", topic)
}

func sameSet(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// attemptTimeout bounds one call of an until condition, so that one stuck
// request does not use up the whole wait.
const attemptTimeout = 10 * time.Second

// until calls f every interval until it returns nil, ctx ends or timeout
// passes, returning f's last error then.
func until(ctx context.Context, timeout, interval time.Duration, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		actx, acancel := context.WithTimeout(ctx, attemptTimeout)
		err := f(actx)
		acancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("after %v: %w", timeout, err)
		case <-tick.C:
		}
	}
}
