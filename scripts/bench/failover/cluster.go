package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/internal/brokerproc"
)

// overrides collects repeated --override key=value flags.
type overrides []string

func (o *overrides) String() string { return strings.Join(*o, ",") }

func (o *overrides) Set(v string) error {
	if !strings.Contains(v, "=") {
		return fmt.Errorf("%q is not key=value", v)
	}
	*o = append(*o, v)
	return nil
}

// clusterFlags are the flags of the commands that run brokers.
type clusterFlags struct {
	ktool, dir, zookeeper string
	overrides             overrides
}

func (c *clusterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.ktool, "ktool", "", "the ktool binary")
	fs.StringVar(&c.dir, "dir", "", "directory for the brokers' data and logs (broker-<id>/)")
	fs.StringVar(&c.zookeeper, "zookeeper", "", "zookeeper.connect of the brokers, host:port/chroot")
	fs.Var(&c.overrides, "override", "a broker setting key=value (repeatable)")
}

// start runs n brokers, ids 1..n, and waits until all are ready.
func (c *clusterFlags) start(n int) (*brokerproc.Cluster, error) {
	if c.ktool == "" || c.dir == "" || c.zookeeper == "" {
		return nil, errors.New("--ktool, --dir and --zookeeper are required")
	}
	return brokerproc.StartCluster(brokerproc.ClusterSpec{Bin: c.ktool, N: n, FirstID: 1, Dir: c.dir,
		ZooKeeper: c.zookeeper, Overrides: c.overrides})
}

// runCluster runs --brokers brokers until ctx ends, then stops them with
// SIGTERM (controlled shutdown).
func runCluster(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("cluster", flag.ContinueOnError)
	var cf clusterFlags
	cf.register(fs)
	n := fs.Int("brokers", 3, "brokers to run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, err := cf.start(*n)
	if err != nil {
		logTails(errOut, c)
		return fmt.Errorf("cluster: %w", err)
	}
	fmt.Fprintf(out, "brokers=%s\n", strings.Join(c.Addrs(), ","))
	<-ctx.Done()
	return c.Stop(time.Minute)
}

// runRounds measures SIGKILL, controller SIGKILL and SIGTERM failovers on three brokers it runs.
func runRounds(ctx context.Context, args []string, errOut io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var cf clusterFlags
	cf.register(fs)
	partitions := fs.Int("partitions", 1000, "partitions of the topic, RF=3")
	rounds := fs.Int("rounds", 3, "measurements of each failover (SIGKILL, SIGKILL of the controller, SIGTERM)")
	outDir := fs.String("out", "", "directory for the results, failover.<mode>.<round>")
	idle := fs.Duration("idle", 10*time.Second, "how long to measure the brokers' idle CPU")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *outDir == "" || *partitions <= 0 || *rounds <= 0 {
		return errors.New("run: --out, --partitions > 0 and --rounds > 0 are required")
	}
	c, err := cf.start(3)
	if err != nil {
		logTails(errOut, c)
		return fmt.Errorf("run: %w", err)
	}
	defer func() { _ = c.Stop(time.Minute) }()
	if err := rounds3(ctx, c, cf.zookeeper, *partitions, *rounds, *outDir, *idle, errOut); err != nil {
		logTails(errOut, c)
		return fmt.Errorf("run: %w", err)
	}
	return nil
}

func rounds3(ctx context.Context, c *brokerproc.Cluster, zookeeper string, partitions, rounds int, outDir string, idle time.Duration, errOut io.Writer) error {
	const topic = "failover"
	addrs := c.Addrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	// The broker answers once every partition has a leader in its metadata
	// (or REQUEST_TIMED_OUT after the request's timeout, the creation going on).
	adm.SetTimeoutMillis(int32((5 * time.Minute).Milliseconds()))
	cctx, cancel := context.WithTimeout(ctx, 6*time.Minute)
	start := time.Now()
	resp, err := adm.CreateTopic(cctx, int32(partitions), 3, nil, topic)
	cancel()
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	answered := time.Since(start)
	settle := func() error { return waitTopic(ctx, addrs, topic, partitions, 3, false, 5*time.Minute) }
	if err := settle(); err != nil {
		return err
	}
	inSync := time.Since(start)
	fmt.Fprintf(errOut, "failover: topic %s of %d partitions created in %v, every ISR full after %v\n", topic, partitions, answered, inSync)
	if err := writeResults(filepath.Join(outDir, "create"), fmt.Sprintf("create_answered_ms=%s\ncreate_in_sync_ms=%s\n", millis(answered), millis(inSync))); err != nil {
		return err
	}
	if err := idleStats(ctx, c, filepath.Join(outDir, "idle"), idle, errOut); err != nil {
		return err
	}
	all := kadm.TopicsSet{topic: {}}
	for p := range int32(partitions) {
		all[topic][p] = struct{}{}
	}
	signal := func(id int32, sig syscall.Signal) error { return c.Broker(id).Signal(sig) }
	// kill: SIGKILL of a broker that is not the controller; killctl: of the
	// controller, whose successor loads the cluster's state first; term:
	// controlled shutdown of the broker leading the most partitions.
	for _, k := range []struct{ name, mode, pick string }{{"kill", "kill", "others"}, {"killctl", "kill", "controller"}, {"term", "term", ""}} {
		mode := k.name
		for r := 1; r <= rounds; r++ {
			path := filepath.Join(outDir, fmt.Sprintf("failover.%s.%d", mode, r))
			f, err := os.Create(path)
			if err != nil {
				return err
			}
			victim, err := measure(ctx, measureOptions{brokers: addrs, zookeeper: zookeeper, topic: topic, mode: k.mode, pick: k.pick,
				candidates: c.IDs(), signal: signal, victim: -1, timeout: 2 * time.Minute, interval: 10 * time.Millisecond}, f, errOut)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("%s round %d: %w", mode, r, err)
			}
			b := c.Broker(victim)
			select {
			case <-b.Done():
			case <-time.After(2 * time.Minute):
				return fmt.Errorf("%s round %d: broker %d still running", mode, r, victim)
			}
			restart := time.Now()
			if err := b.Restart(); err != nil {
				return fmt.Errorf("%s round %d: restarting broker %d: %w", mode, r, victim, err)
			}
			ready := time.Since(restart)
			if err := settle(); err != nil {
				return err
			}
			inSync := time.Since(restart)
			if err := writeResults(filepath.Join(outDir, fmt.Sprintf("restart.%s.%d", mode, r)),
				fmt.Sprintf("restart_ready_ms=%s\nrestart_in_sync_ms=%s\n", millis(ready), millis(inSync))); err != nil {
				return err
			}
			// Leadership back to the preferred replicas, so every round starts
			// from a balanced cluster.
			ectx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			_, err = adm.ElectLeaders(ectx, kadm.ElectPreferredReplica, all)
			cancel()
			if err != nil {
				return fmt.Errorf("preferred election: %w", err)
			}
			// Every broker applied it (the next round must not measure the tail
			// of this election).
			if err := waitTopic(ctx, addrs, topic, partitions, 3, true, 5*time.Minute); err != nil {
				return err
			}
			fmt.Fprintf(errOut, "failover: %s round %d done, results in %s\n", mode, r, path)
		}
	}
	return nil
}

// logTails writes the end of every broker's output.
func logTails(w io.Writer, c *brokerproc.Cluster) {
	if c == nil {
		return
	}
	for _, b := range c.Brokers() {
		fmt.Fprintf(w, "--- broker %d (%s):\n%s\n", b.ID(), filepath.Join(c.Dir(), fmt.Sprintf("broker-%d", b.ID())), b.Tail(40))
	}
}

func millis(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64)
}

func writeResults(path, text string) error { return os.WriteFile(path, []byte(text), 0o644) }

// idleStats writes each broker's resident memory and the CPU it used over
// window with no client traffic (from /proc: VmRSS, utime+stime).
func idleStats(ctx context.Context, c *brokerproc.Cluster, path string, window time.Duration, errOut io.Writer) error {
	before := map[int32]float64{}
	for _, b := range c.Brokers() {
		cpu, err := procCPU(b.PID())
		if err != nil {
			return err
		}
		before[b.ID()] = cpu
	}
	start := time.Now()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(window):
	}
	elapsed := time.Since(start).Seconds()
	var out strings.Builder
	for _, b := range c.Brokers() {
		cpu, err := procCPU(b.PID())
		if err != nil {
			return err
		}
		rss, err := procRSS(b.PID())
		if err != nil {
			return err
		}
		pct := (cpu - before[b.ID()]) / elapsed * 100
		fmt.Fprintf(&out, "broker_%d_rss_mib=%.1f\nbroker_%d_idle_cpu_pct=%.2f\n", b.ID(), rss, b.ID(), pct)
		fmt.Fprintf(errOut, "failover: broker %d: RSS %.1f MiB, %.2f%% of a core idle over %v\n", b.ID(), rss, pct, window)
	}
	return writeResults(path, out.String())
}

// procCPU is a process's user+system CPU time in seconds.
func procCPU(pid int) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name is in parentheses and may hold spaces: fields count from after it.
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return (utime + stime) / clockTicks, nil
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times, 100 on Linux.
const clockTicks = 100

// procRSS is a process's resident set in MiB.
func procRSS(pid int) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmRSS", pid)
}
