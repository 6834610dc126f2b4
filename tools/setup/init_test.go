package setup

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ktoolhq/ktool/internal/zkinstall"
	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// freePort returns the first of n consecutive free ports.
func freePort(t *testing.T, n int) int {
	t.Helper()
	for range 100 {
		base := 20000 + rand.IntN(30000)
		if portsFree("127.0.0.1", base, n) == nil {
			return base
		}
	}
	t.Fatal("no free port range")
	return 0
}

type initRun struct {
	opts    *InitOptions
	out     string
	err     error
	started string // the dir the cluster was started from
}

// fakeCluster records Up and reports running the directories in running.
type fakeCluster struct {
	r       *initRun
	running map[string]bool
}

func (c fakeCluster) Up(_ context.Context, dir string) error {
	c.r.started = dir
	return nil
}

func (c fakeCluster) Running(dir string) bool { return c.running[dir] }

// runInit parses args as `ktool cluster init` would and runs the wizard on
// streams that are not a terminal. zk says whether a ZooKeeper is "installed".
func runInit(t *testing.T, zk bool, args ...string) initRun {
	t.Helper()
	return runInitWith(t, zk, nil, args...)
}

// runInitWith is runInit with the directories where a cluster runs.
func runInitWith(t *testing.T, zk bool, running map[string]bool, args ...string) initRun {
	t.Helper()
	ios, _, out, _ := cmdutil.Test()
	f := cmdutil.NewFactory(ios, cmdutil.BuildInfo{})
	var r initRun
	cmd := NewInitCommand(f, nil, filepath.Join(t.TempDir(), "kc"), func(ctx context.Context, o *InitOptions) error {
		r.opts = o
		o.FindZooKeeper = func() (zkinstall.Install, error) {
			if zk {
				return zkinstall.Install{Java: "/bin/java", Source: "test"}, nil
			}
			return zkinstall.Install{}, errors.New("no ZooKeeper installation found")
		}
		o.Cluster = fakeCluster{r: &r, running: running}
		return RunInit(ctx, o)
	})
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(out)
	r.err = cmd.ExecuteContext(context.Background())
	r.out = out.String()
	return r
}

func TestInitUnattended(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kc")
	base := freePort(t, 2)
	r := runInit(t, false, "--yes", "--dir", dir, "-n", "2", "--base-port", strconv.Itoa(base),
		"--partitions", "6", "--unclean-leader-election", "--auto-leader-rebalance=false", "--assignor", "sticky", "--compression", "lz4", "--start")
	if r.err != nil {
		t.Fatalf("%v\n%s", r.err, r.out)
	}
	if r.started != dir {
		t.Fatalf("started %q, want %q", r.started, dir)
	}
	spec, ok, err := ReadSpec(dir)
	if err != nil || !ok {
		t.Fatalf("ReadSpec: %v %v", ok, err)
	}
	want := Spec{Brokers: 2, Host: "127.0.0.1", BasePort: base, ZooKeeper: ZKEmbedded, ZooKeeperPort: 2181, ZooKeeperNodes: 1,
		Partitions: 6, ReplicationFactor: 2, MinInsyncReplicas: 1, UncleanElection: true, AutoLeaderRebalance: false,
		Assignor: "sticky", Compression: "lz4", Profile: "local"}
	if spec.Brokers != want.Brokers || spec.BasePort != want.BasePort || spec.ZooKeeper != want.ZooKeeper ||
		spec.Partitions != want.Partitions || spec.ReplicationFactor != want.ReplicationFactor || spec.MinInsyncReplicas != want.MinInsyncReplicas ||
		spec.UncleanElection != want.UncleanElection || spec.AutoLeaderRebalance != want.AutoLeaderRebalance ||
		spec.Assignor != want.Assignor || spec.Compression != want.Compression {
		t.Fatalf("spec %+v\nwant %+v", spec, want)
	}
	for _, s := range []string{"Summary", "min.insync.replicas         1", "embedded store", "Wrote:", ConfigPath(dir, 1)} {
		if !strings.Contains(r.out, s) {
			t.Errorf("output lacks %q:\n%s", s, r.out)
		}
	}
	if _, err := os.Stat(ConfigPath(dir, 2)); err == nil {
		t.Error("a third broker's server.properties was written")
	}

	// Again on the same directory: refused without --force, replaced with it.
	r = runInit(t, false, "--yes", "--dir", dir, "-n", "1", "--base-port", strconv.Itoa(base))
	if r.err == nil || !strings.Contains(r.err.Error(), "--force") {
		t.Fatalf("second init: %v", r.err)
	}
	r = runInit(t, false, "--yes", "--dir", dir, "-n", "1", "--base-port", strconv.Itoa(base), "--force")
	if r.err != nil {
		t.Fatal(r.err)
	}
	if spec, _, _ := ReadSpec(dir); spec.Brokers != 1 || spec.ReplicationFactor != 1 {
		t.Fatalf("after --force: %+v", spec)
	}
	if r.started != "" || !strings.Contains(r.out, "ktool cluster up --from "+dir) {
		t.Fatalf("started %q without --start; output:\n%s", r.started, r.out)
	}
	// Not while the cluster runs, even with --force.
	r = runInitWith(t, false, map[string]bool{dir: true}, "--yes", "--dir", dir, "-n", "1", "--base-port", strconv.Itoa(base), "--force")
	if r.err == nil || !strings.Contains(r.err.Error(), "cluster down") {
		t.Fatalf("init over a running cluster: %v", r.err)
	}
}

// Without a terminal and without --yes the wizard must not prompt either.
func TestInitWithoutTerminalNeverPrompts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kc")
	r := runInit(t, true, "--dir", dir, "--base-port", strconv.Itoa(freePort(t, 3)), "--zookeeper-port", strconv.Itoa(freePort(t, 1)))
	if r.err != nil {
		t.Fatalf("%v\n%s", r.err, r.out)
	}
	spec, _, err := ReadSpec(dir)
	if err != nil {
		t.Fatal(err)
	}
	if spec.ZooKeeper != ZKLocal || spec.Brokers != 3 || spec.ReplicationFactor != 3 || spec.MinInsyncReplicas != 2 {
		t.Fatalf("defaults with ZooKeeper installed: %+v", spec)
	}
}

// Without a terminal, a real-machines flag without --hosts is an error
// naming --hosts, not a prompt nor a local cluster.
func TestInitHostsFlagsWithoutTerminal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "prod")
	r := runInit(t, false, "--dir", dir, "--racks", "a,b,c")
	if r.err == nil || !strings.Contains(r.err.Error(), "--racks is for a cluster on real machines: name them with --hosts") {
		t.Fatalf("init --racks without --hosts or a terminal: %v\n%s", r.err, r.out)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("files were written")
	}
}

func TestInitRejectsBadAnswers(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)
	free := strconv.Itoa(freePort(t, 3))
	tests := []struct {
		name string
		zk   bool
		args []string
		want string
	}{
		{"rf above brokers", false, []string{"-n", "2", "--replication-factor", "3", "--base-port", free}, "replication factor must be between 1 and the broker count (2)"},
		{"min isr above rf", false, []string{"--replication-factor", "2", "--min-insync-replicas", "3", "--base-port", free}, "min.insync.replicas must be between 1 and the replication factor (2)"},
		{"busy port", false, []string{"-n", "1", "--base-port", busyPort}, "ports in use"},
		{"external without address", false, []string{"--zookeeper-mode", "external", "--base-port", free}, "needs --zookeeper"},
		{"address and embedded", false, []string{"--zookeeper-mode", "embedded", "--zookeeper", "127.0.0.1:2181", "--base-port", free}, "does not go with"},
		{"local without install", false, []string{"--zookeeper-mode", "local", "--base-port", free}, "no ZooKeeper installation"},
		{"unknown mode", true, []string{"--zookeeper-mode", "kraft", "--base-port", free}, "want local, external or embedded"},
		{"bad address", false, []string{"--zookeeper", "localhost", "--base-port", free}, "ZooKeeper address"},
		{"assignor", false, []string{"--assignor", "fair", "--base-port", free}, "assignor \"fair\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "kc")
			r := runInit(t, tt.zk, append([]string{"--yes", "--dir", dir}, tt.args...)...)
			var ee *cmdutil.ExitErr
			if r.err == nil || !strings.Contains(r.err.Error(), tt.want) || !errors.As(r.err, &ee) || ee.Code != cmdutil.ExitUsage {
				t.Fatalf("error %v, want a usage error with %q", r.err, tt.want)
			}
			if _, err := os.Stat(filepath.Join(dir, SpecFile)); err == nil {
				t.Fatal("files written despite the error")
			}
		})
	}
}
