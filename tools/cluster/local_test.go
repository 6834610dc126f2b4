package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/internal/testbin"
	"github.com/ktoolhq/ktool/internal/zkinstall"
	"github.com/ktoolhq/ktool/internal/zktest"
	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// ktoolBin is the binary the process-level tests run, built by TestMain.
var (
	ktoolBin string
	buildErr error
)

func TestMain(m *testing.M) {
	var cleanup func()
	ktoolBin, cleanup, buildErr = testbin.Build()
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// env is one test's environment for the binary: a private config file and
// cache dir.
type env struct {
	t      *testing.T
	dir    string // cluster dir
	config string
	vars   []string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	home := t.TempDir()
	e := &env{t: t, dir: filepath.Join(home, "cluster"), config: filepath.Join(home, "config.yaml")}
	e.vars = append(os.Environ(), "KTOOL_CONFIG="+e.config, "XDG_CACHE_HOME="+filepath.Join(home, "cache"), "KTOOL_CLUSTER_DIR=", "KTOOL_PROFILE=", "KTOOL_BROKERS=")
	t.Cleanup(e.cleanup)
	return e
}

// run runs ktool with args (and --dir for the cluster verbs).
func (e *env) run(args ...string) (stdout, stderr string, err error) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ktoolBin, args...)
	cmd.Env = e.vars
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

func (e *env) mustRun(args ...string) string {
	e.t.Helper()
	out, errOut, err := e.run(args...)
	if err != nil {
		e.t.Fatalf("ktool %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// cleanup stops whatever the test's cluster left running: down first, then
// SIGKILL of every recorded process.
func (e *env) cleanup() {
	st, err := LoadState(e.dir)
	if err != nil {
		return
	}
	if st.Running() {
		_, _, _ = e.run("cluster", "down", "--dir", e.dir, "--timeout", "10s")
	}
	procs := []*Proc{st.Supervisor, st.ZooKeeperProcess}
	for _, b := range st.Brokers {
		procs = append(procs, b.Process)
	}
	if st, err := LoadState(e.dir); err == nil {
		for _, b := range st.Brokers {
			procs = append(procs, b.Process)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, _ = stopProcs(ctx, procs, 0)
	if e.t.Failed() {
		for _, b := range st.Brokers {
			e.t.Logf("%s:\n%s", b.Log, logTail(b.Log, 30))
		}
		e.t.Logf("supervisor.log:\n%s", logTail(filepath.Join(e.dir, "supervisor.log"), 30))
	}
}

// freeBase picks a base port with n free ports after it, and one more free
// port (for ZooKeeper).
func freeBase(t *testing.T, n int) (base, extra int) {
	t.Helper()
	for range 100 {
		base = 20000 + rand.IntN(30000)
		ok := true
		for p := base; p < base+n+1 && ok; p++ {
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				ok = false
				break
			}
			ln.Close()
		}
		if ok {
			return base, base + n
		}
	}
	t.Fatal("no free port range")
	return 0, 0
}

func (e *env) status() Status {
	e.t.Helper()
	var s Status
	out := e.mustRun("cluster", "status", "--dir", e.dir, "-o", "json")
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		e.t.Fatalf("status json: %v\n%s", err, out)
	}
	return s
}

// eventually polls f every 100 ms until it returns nil, failing after d.
func eventually(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true after %s: %v", what, d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// experiment is the seed's: a replicated topic, its leader killed, a new
// leader elected from the ISR, the broker started again and back in the ISR,
// then the cluster stopped.
func experiment(t *testing.T, e *env, upArgs ...string) {
	base, zkPort := freeBase(t, 3)
	args := append([]string{"cluster", "up", "--dir", e.dir, "-n", "3", "--base-port", strconv.Itoa(base), "--zookeeper-port", strconv.Itoa(zkPort)}, upArgs...)
	out := e.mustRun(args...)
	if !strings.Contains(out, "controller") || !strings.Contains(out, "Profile \"local\" (current)") {
		t.Fatalf("up printed:\n%s", out)
	}
	cfg, err := cmdutil.LoadConfig(e.config)
	if err != nil {
		t.Fatal(err)
	}
	addrs := []string{fmt.Sprintf("127.0.0.1:%d", base), fmt.Sprintf("127.0.0.1:%d", base+1), fmt.Sprintf("127.0.0.1:%d", base+2)}
	if p := cfg.Profiles["local"]; cfg.Current != "local" || p == nil || !slices.Equal(p.Brokers, addrs) {
		t.Fatalf("profile: current %q, %+v", cfg.Current, cfg.Profiles["local"])
	}
	if _, _, err := e.run(args...); err == nil {
		t.Fatal("a second up on a running cluster succeeded")
	}

	s := e.status()
	for _, b := range s.Brokers {
		if !b.Running || !b.Registered {
			t.Fatalf("after up: %+v", s)
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "seed"); err != nil {
		t.Fatal(err)
	}
	partition := func() (kadm.PartitionDetail, error) {
		m, err := cmdutil.Metadata(ctx, adm, "seed")
		if err != nil {
			return kadm.PartitionDetail{}, err
		}
		p, ok := m.Topics["seed"].Partitions[0]
		if !ok {
			return p, fmt.Errorf("no partition 0 yet")
		}
		return p, p.Err
	}
	var leader int32
	eventually(t, 30*time.Second, "a leader with a full ISR", func() error {
		p, err := partition()
		if err != nil {
			return err
		}
		if p.Leader < 0 || len(p.ISR) != 3 {
			return fmt.Errorf("%+v", p)
		}
		leader = p.Leader
		return nil
	})
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "seed", Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Completion asks the cluster through the saved profile and caches the names.
	if names := e.complete("topic", "describe", ""); !slices.Contains(names, "seed") {
		t.Fatalf("topic completion %v", names)
	}
	if ids := e.complete("cluster", "kill", "--dir", e.dir, ""); len(ids) != 3 || !strings.HasPrefix(ids[0], "0\t127.0.0.1:") {
		t.Fatalf("broker id completion %q", ids)
	}

	e.mustRun("cluster", "kill", strconv.Itoa(int(leader)), "--dir", e.dir)
	if _, _, err := e.run("cluster", "kill", strconv.Itoa(int(leader)), "--dir", e.dir); err == nil {
		t.Fatal("killing a dead broker succeeded")
	}
	eventually(t, 60*time.Second, "a new leader from the ISR", func() error {
		p, err := partition()
		if err != nil {
			return err
		}
		if p.Leader < 0 || p.Leader == leader || slices.Contains(p.ISR, leader) {
			return fmt.Errorf("%+v", p)
		}
		return nil
	})
	s = e.status()
	for _, b := range s.Brokers {
		if (b.ID == leader) == b.Running {
			t.Fatalf("after kill %d: %+v", leader, s)
		}
	}
	if ids := e.complete("cluster", "start", "--dir", e.dir, ""); len(ids) != 1 || !strings.HasPrefix(ids[0], fmt.Sprintf("%d\t", leader)) {
		t.Fatalf("start completes %q, want only the killed broker %d", ids, leader)
	}
	if ids := e.complete("cluster", "kill", "--dir", e.dir, ""); len(ids) != 2 {
		t.Fatalf("kill completes %q, want the two running brokers", ids)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "seed", Value: []byte("during")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	e.mustRun("cluster", "start", strconv.Itoa(int(leader)), "--dir", e.dir)
	eventually(t, 60*time.Second, "the restarted broker back in the ISR", func() error {
		p, err := partition()
		if err != nil {
			return err
		}
		if len(p.ISR) != 3 {
			return fmt.Errorf("%+v", p)
		}
		return nil
	})
	s = e.status()
	for _, b := range s.Brokers {
		if !b.Running || !b.Registered {
			t.Fatalf("after start: %+v", s)
		}
	}
	st, err := LoadState(e.dir)
	if err != nil {
		t.Fatal(err)
	}

	out = e.mustRun("cluster", "down", "--dir", e.dir)
	if !strings.Contains(out, "Stopped") {
		t.Fatalf("down printed:\n%s", out)
	}
	if st.Running() {
		t.Fatalf("processes alive after down: %+v", st)
	}
	s = e.status()
	if s.Controller != -1 {
		t.Fatalf("after down: %+v", s)
	}
	for _, b := range s.Brokers {
		if b.Running {
			t.Fatalf("after down: %+v", s)
		}
	}
	if out := e.mustRun("cluster", "down", "--dir", e.dir); !strings.Contains(out, "not running") {
		t.Fatalf("second down printed:\n%s", out)
	}
	// down stops the brokers one by one, the controller last, so no
	// controlled shutdown has to retry.
	for _, b := range st.Brokers {
		log, err := os.ReadFile(b.Log)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"controlled shutdown request failed", "controlled shutdown incomplete"} {
			if strings.Contains(string(log), bad) {
				t.Errorf("broker %d logged %q", b.ID, bad)
			}
		}
	}
	// The cluster is down: completion answers from its cache (or nothing),
	// and never waits for the dead brokers. The bound is for correctness,
	// far above the 150 ms budget.
	start := time.Now()
	names := e.complete("produce", "s")
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("completion with the cluster down took %s", took)
	}
	if len(names) > 1 || len(names) == 1 && names[0] != "seed" {
		t.Fatalf("completion with the cluster down: %v", names)
	}
}

// complete runs cobra's completion request for the words and returns the
// names offered (the final ":directive" line dropped).
func (e *env) complete(words ...string) []string {
	e.t.Helper()
	out := e.mustRun(append([]string{"__complete"}, words...)...)
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line != "" && !strings.HasPrefix(line, ":") && !strings.HasPrefix(line, "Completion ended") {
			names = append(names, line)
		}
	}
	return names
}

func TestLocalClusterEmbedded(t *testing.T) {
	e := newEnv(t)
	experiment(t, e, "--embedded")
	st, err := LoadState(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode != ModeEmbedded || st.Supervisor == nil || st.ZooKeeperProcess != nil {
		t.Fatalf("state %+v", st)
	}
}

func TestLocalClusterZooKeeper(t *testing.T) {
	if _, err := zkinstall.Find(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI needs a ZooKeeper installation: %v", err)
		}
		t.Skipf("SKIPPING the ZooKeeper-mode local cluster test: %v", err)
	}
	e := newEnv(t)
	experiment(t, e)
	st, err := LoadState(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode != ModeZooKeeper || st.ZooKeeperProcess == nil || st.Supervisor != nil {
		t.Fatalf("state %+v", st)
	}
	for _, b := range st.Brokers {
		if b.Process == nil {
			t.Fatalf("broker %d has no process", b.ID)
		}
	}
}

func TestUpRefusesBusyPorts(t *testing.T) {
	e := newEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	_, errOut, err := e.run("cluster", "up", "--dir", e.dir, "--embedded", "-n", "1", "--base-port", strconv.Itoa(port))
	if err == nil || !strings.Contains(errOut, "ports in use") || !strings.Contains(errOut, strconv.Itoa(port)) {
		t.Fatalf("err %v, stderr:\n%s", err, errOut)
	}
}

func TestUpRejectsBadSpecs(t *testing.T) {
	e := newEnv(t)
	for _, args := range [][]string{
		{"-n", "0"},
		{"--zookeeper", "nohost"},
		{"--embedded", "--zookeeper", "127.0.0.1:2181"},
		{"--base-port", "70000"},
	} {
		_, errOut, err := e.run(append([]string{"cluster", "up", "--dir", e.dir}, args...)...)
		var ee *exec.ExitError
		if err == nil || !asExit(err, &ee) || ee.ExitCode() != cmdutil.ExitUsage {
			t.Errorf("up %v: %v\n%s", args, err, errOut)
		}
	}
}

func TestUpRejectsDirTooLongForSocket(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(e.dir, strings.Repeat("d", 100))
	_, errOut, err := e.run("cluster", "up", "--dir", dir, "--embedded", "-n", "1")
	if err == nil || !strings.Contains(errOut, "use a shorter --dir") {
		t.Fatalf("err %v\n%s", err, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "cluster.yaml")); err == nil {
		t.Fatal("files written for a cluster that cannot start")
	}
}

func asExit(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*ee = e
	return ok
}

func TestKillAndStartNeedACluster(t *testing.T) {
	e := newEnv(t)
	for _, verb := range []string{"kill", "start", "status", "down"} {
		args := []string{"cluster", verb, "--dir", e.dir}
		if verb == "kill" || verb == "start" {
			args = append(args, "0")
		}
		_, errOut, err := e.run(args...)
		if err == nil || !strings.Contains(errOut, "no cluster in") {
			t.Errorf("%s: %v\n%s", verb, err, errOut)
		}
	}
	if _, errOut, err := e.run("cluster", "kill", "one", "--dir", e.dir); err == nil || !strings.Contains(errOut, "not a non-negative number") {
		t.Errorf("kill one: %v\n%s", err, errOut)
	}
}

// The wizard's --start runs the cluster it wrote, as up --from would.
func TestInitStartsCluster(t *testing.T) {
	e := newEnv(t)
	base, _ := freeBase(t, 2)
	out := e.mustRun("cluster", "init", "--yes", "--dir", e.dir, "-n", "2", "--base-port", strconv.Itoa(base), "--zookeeper-mode", "embedded", "--start")
	if !strings.Contains(out, "Summary") || !strings.Contains(out, "controller") {
		t.Fatalf("init printed:\n%s", out)
	}
	s := e.status()
	if len(s.Brokers) != 2 || !s.Brokers[0].Registered || !s.Brokers[1].Registered || s.Mode != ModeEmbedded {
		t.Fatalf("status %+v", s)
	}
	e.mustRun("cluster", "down", "--dir", e.dir)
	// up --from reads the same files again.
	e.mustRun("cluster", "up", "--from", e.dir)
	if s := e.status(); len(s.Brokers) != 2 || s.Controller < 0 {
		t.Fatalf("status after up --from %+v", s)
	}
}

// --foreground stays until interrupted, then stops the cluster.
func TestUpForeground(t *testing.T) {
	e := newEnv(t)
	base, _ := freeBase(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ktoolBin, "cluster", "up", "--foreground", "--embedded", "-n", "1", "--base-port", strconv.Itoa(base), "--dir", e.dir)
	cmd.Env = e.vars
	out, errOut := &lockedBuffer{}, &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	eventually(t, time.Minute, "up to report the cluster and stay", func() error {
		select {
		case err := <-exited:
			t.Fatalf("up --foreground exited: %v\n%s", err, errOut.String())
		default:
		}
		if !strings.Contains(errOut.String(), "Ctrl-C stops the cluster") {
			return fmt.Errorf("stderr so far:\n%s", errOut.String())
		}
		return nil
	})
	if s := e.status(); len(s.Brokers) != 1 || !s.Brokers[0].Registered {
		t.Fatalf("status %+v", s)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("up --foreground: %v\n%s", err, errOut.String())
		}
	case <-ctx.Done():
		t.Fatal("up --foreground did not stop")
	}
	st, err := LoadState(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Running() {
		t.Fatalf("cluster still running after Ctrl-C: %+v", st)
	}
	if !strings.Contains(out.String(), "Stopped the supervisor") {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
}

// lockedBuffer is a buffer a child process's output can be copied into while
// the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// With --zookeeper the cluster uses that ZooKeeper and down leaves it alone;
// a local ZooKeeper already on the port is pointed out instead of started.
func TestExternalZooKeeper(t *testing.T) {
	zk := zktest.Start(t)
	e := newEnv(t)
	base, _ := freeBase(t, 2)
	_, port, err := net.SplitHostPort(zk.Addr())
	if err != nil {
		t.Fatal(err)
	}
	_, errOut, err := e.run("cluster", "up", "--dir", e.dir, "-n", "2", "--base-port", strconv.Itoa(base), "--zookeeper-port", port)
	if err == nil || !strings.Contains(errOut, "already answers on "+zk.Addr()) || !strings.Contains(errOut, "--zookeeper "+zk.Addr()) {
		t.Fatalf("up on a busy ZooKeeper port: %v\n%s", err, errOut)
	}
	connect := zk.Addr() + "/kc"
	e.mustRun("cluster", "up", "--dir", e.dir, "-n", "2", "--base-port", strconv.Itoa(base), "--zookeeper", connect)
	s := e.status()
	if s.Mode != ModeZooKeeper || s.ZooKeeper != connect || s.ZooKeeperPID != 0 || s.Controller < 0 || len(s.Brokers) != 2 {
		t.Fatalf("status %+v", s)
	}
	cfg, err := cmdutil.LoadConfig(e.config)
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.Profiles["local"]; p == nil || p.Zookeeper != connect {
		t.Fatalf("profile %+v", cfg.Profiles["local"])
	}
	out := e.mustRun("cluster", "down", "--dir", e.dir)
	if strings.Contains(out, "ZooKeeper") {
		t.Fatalf("down touched ZooKeeper:\n%s", out)
	}
	if !ruok(context.Background(), zk.Addr()) {
		t.Fatal("the external ZooKeeper stopped with the cluster")
	}
}
