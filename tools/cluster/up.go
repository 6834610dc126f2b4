package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/internal/zkinstall"
	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/setup"
)

// DefaultDir is where a local cluster lives unless --dir says otherwise:
// $KTOOL_CLUSTER_DIR, else <user cache dir>/ktool/cluster.
func DefaultDir() string {
	if d := os.Getenv("KTOOL_CLUSTER_DIR"); d != "" {
		return d
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "ktool", "cluster")
}

// UpOptions are the inputs of `ktool cluster up`.
type UpOptions struct {
	Factory *cmdutil.Factory
	Output  cmdutil.OutputFlag

	Dir             string
	Brokers         int
	BasePort        int
	MetricsBasePort int
	ZooKeeper       string
	ZooKeeperPort   int
	ZooKeeperNodes  int
	Embedded        bool
	Profile         string
	Foreground      bool
	Wait            time.Duration
	Secure          bool

	// Changed says which of the spec's flags were given; the others come
	// from DIR/cluster.yaml when it exists.
	Changed func(flag string) bool
	// Executable is the ktool binary the cluster's processes run.
	Executable string
}

// NewUpCommand returns `ktool cluster up`.
func NewUpCommand(f *cmdutil.Factory, runF func(context.Context, *UpOptions) error) *cobra.Command {
	opts := &UpOptions{Factory: f}
	var from string
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a local cluster of N brokers",
		Long: `Start a local cluster: N brokers on HOST:BASE-PORT+id (ids 0..N-1), each with
its settings, log and data under DIR/broker-<id>.

Coordination:
  --zookeeper ADDR   the brokers use that ZooKeeper.
  (default)          ZooKeeper is started from a local installation (Debian's
                     /usr/share/java/zookeeper.jar, Homebrew, ZOOKEEPER_HOME) as a
                     process of the cluster, its data under DIR/zookeeper; each
                     broker is a process of its own.
  --embedded, or no ZooKeeper installed
                     the brokers run inside one supervisor process on the embedded
                     coordination store.

The command returns once every broker is registered and a controller is
elected; the processes keep running in the background (--foreground stays and
stops the cluster on Ctrl-C). A profile (default "local") is saved with the
brokers' addresses. DIR/cluster.yaml (written by ` + "`ktool cluster init`" + `, or by
the first up) holds the settings; flags given here override it.
` + "`ktool cluster status|kill|start|down`" + ` then act on the processes recorded in
DIR/cluster.json and on nothing else.`,
		Example: `  ktool cluster up
  ktool cluster up -n 5 --base-port 19092 --dir /tmp/kc
  ktool cluster up --zookeeper localhost:2181/kafka
  ktool cluster up --from ./my-cluster     # files written by ktool cluster init`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from != "" {
				if cmd.Flags().Changed("dir") && opts.Dir != from {
					return cmdutil.Usagef("--from and --dir name different directories")
				}
				opts.Dir = from
			}
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if opts.Embedded && opts.ZooKeeper != "" {
				return cmdutil.Usagef("--embedded and --zookeeper exclude each other")
			}
			if opts.Wait <= 0 {
				return cmdutil.Usagef("--wait must be positive")
			}
			opts.Changed = cmd.Flags().Changed
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("finding the ktool executable: %w", err)
			}
			opts.Executable = exe
			return RunUp(cmd.Context(), opts)
		},
	}
	def := setup.DefaultSpec()
	fl := cmd.Flags()
	fl.StringVar(&opts.Dir, "dir", DefaultDir(), "cluster directory: settings, logs and data (env KTOOL_CLUSTER_DIR)")
	fl.StringVar(&from, "from", "", "`DIR` written by ktool cluster init (same as --dir)")
	fl.IntVarP(&opts.Brokers, "num-brokers", "n", def.Brokers, "number of brokers")
	fl.IntVar(&opts.BasePort, "base-port", def.BasePort, "port of broker 0; broker N listens on base-port+N")
	fl.IntVar(&opts.MetricsBasePort, "metrics-base-port", def.MetricsBasePort, "metrics port of broker 0 (0: no metrics listener)")
	fl.StringVar(&opts.ZooKeeper, "zookeeper", "", "use this ZooKeeper (host:port[/chroot]) instead of starting one")
	fl.IntVar(&opts.ZooKeeperPort, "zookeeper-port", def.ZooKeeperPort, "client port of the ZooKeeper started locally (of its node 1)")
	fl.IntVar(&opts.ZooKeeperNodes, "zookeeper-nodes", def.ZooKeeperNodes, "ZooKeeper servers to start locally: 1, or an ensemble of 3 or 5 "+
		"(client ports zookeeper-port+i, quorum ports +100+i, election ports +200+i) that survives losing a minority")
	fl.BoolVar(&opts.Embedded, "embedded", false, "run the brokers in one process on the embedded store, even when ZooKeeper is installed")
	fl.StringVar(&opts.Profile, "profile-name", def.Profile, "profile to save with the brokers' addresses (\"\" saves none)")
	fl.BoolVar(&opts.Foreground, "foreground", false, "stay in the foreground and stop the cluster on Ctrl-C")
	fl.DurationVar(&opts.Wait, "wait", time.Minute, "how long to wait for the brokers to register")
	fl.BoolVar(&opts.Secure, "secure", false, "SASL_SSL with SCRAM on the brokers' ports and TLS between brokers on the ports after them; "+
		"certificates under DIR/pki, the ACL authorizer, an admin super user whose password is in DIR/admin.password, a profile and DIR/client.properties that use it, "+
		"and sample users producer and consumer (DIR/USER.password, DIR/USER.properties) with ACLs on topics and groups demo-*")
	opts.Output.Register(cmd)
	_ = cmd.MarkFlagDirname("dir")
	_ = cmd.MarkFlagDirname("from")
	return cmd
}

// spec builds the cluster's definition: DIR/cluster.yaml or the defaults,
// overridden by the flags that were given.
func (o *UpOptions) spec() (setup.Spec, error) {
	spec, ok, err := setup.ReadSpec(o.Dir)
	if err != nil {
		return spec, err
	}
	if !ok {
		spec = setup.DefaultSpec()
	}
	changed := o.Changed
	if changed == nil {
		changed = func(string) bool { return true }
	}
	if changed("num-brokers") || !ok {
		spec.Brokers = o.Brokers
		spec.FitReplication()
	}
	if changed("base-port") || !ok {
		spec.BasePort = o.BasePort
	}
	if changed("metrics-base-port") || !ok {
		spec.MetricsBasePort = o.MetricsBasePort
	}
	if changed("zookeeper-port") || !ok {
		spec.ZooKeeperPort = o.ZooKeeperPort
	}
	if changed("zookeeper-nodes") || !ok {
		spec.ZooKeeperNodes = o.ZooKeeperNodes
	}
	if changed("profile-name") || !ok {
		spec.Profile = o.Profile
	}
	if changed("secure") || !ok {
		spec.Secure = o.Secure
	}
	switch {
	case o.ZooKeeper != "":
		spec.ZooKeeper, spec.ZooKeeperAddr = setup.ZKExternal, o.ZooKeeper
	case o.Embedded:
		spec.ZooKeeper = setup.ZKEmbedded
	}
	if err := spec.Validate(); err != nil {
		return spec, cmdutil.UsageError(err)
	}
	return spec, nil
}

// RunUp starts the cluster in o.Dir and waits until it is up.
func RunUp(ctx context.Context, o *UpOptions) error {
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return err
	}
	o.Dir = dir
	unlock, err := lockDir(dir)
	if err != nil {
		return err
	}
	st, err := o.start(ctx)
	unlock()
	if err != nil {
		return err
	}
	if !o.Foreground {
		return nil
	}
	fmt.Fprintln(o.Factory.IO.ErrOut, "Running in the foreground; Ctrl-C stops the cluster.")
	<-ctx.Done()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	return runDown(dctx, &DownOptions{Factory: o.Factory, Dir: st.Dir, Timeout: 30 * time.Second})
}

func (o *UpOptions) start(ctx context.Context) (*State, error) {
	w := o.Factory.IO.ErrOut
	if prev, err := LoadState(o.Dir); err == nil && prev.Running() {
		return nil, fmt.Errorf("the cluster in %s is already running (see `ktool cluster status --dir %s`; stop it with `ktool cluster down --dir %s`)", o.Dir, o.Dir, o.Dir)
	}
	spec, err := o.spec()
	if err != nil {
		return nil, err
	}
	var install zkinstall.Install
	if spec.ZooKeeper == setup.ZKAuto || spec.ZooKeeper == setup.ZKLocal {
		in, ferr := zkinstall.Find()
		switch {
		case ferr == nil:
			install, spec.ZooKeeper = in, setup.ZKLocal
		case spec.ZooKeeper == setup.ZKLocal:
			return nil, ferr
		default:
			spec.ZooKeeper = setup.ZKEmbedded
			fmt.Fprintf(w, "%v.\nRunning the %d brokers in one process on the embedded coordination store instead.\n", ferr, spec.Brokers)
		}
	}
	socket := filepath.Join(o.Dir, "supervisor.sock")
	// Unix socket paths are limited to about 100 bytes (104 on macOS).
	if spec.ZooKeeper == setup.ZKEmbedded && len(socket) > 100 {
		return nil, cmdutil.Usagef("the supervisor's control socket %s would be too long a path for a unix socket; use a shorter --dir", socket)
	}
	if spec.ZooKeeper == setup.ZKLocal {
		for _, zk := range strings.Split(spec.ZooKeeperConnect(), ",") {
			if ruok(ctx, zk) {
				return nil, cmdutil.Usagef("a ZooKeeper already answers on %s: use it with --zookeeper %s, or start another with --zookeeper-port", zk, zk)
			}
		}
	}
	if err := spec.CheckPortsFree(); err != nil {
		return nil, fmt.Errorf("%w (choose others with --base-port, --metrics-base-port or --zookeeper-port)", err)
	}
	if _, err := spec.WriteFiles(o.Dir); err != nil {
		return nil, err
	}
	st := &State{Version: 1, Dir: o.Dir, Mode: ModeZooKeeper, ZooKeeper: spec.ZooKeeperConnect()}
	// Until the SCRAM admin exists, ktool authenticates as the same admin with
	// PLAIN, which the brokers' JAAS line knows.
	var bootstrap []kgo.Opt
	if spec.Secure {
		st.Security = &cmdutil.Security{TLSCA: setup.CAFile(o.Dir), SASLMechanism: "SCRAM-SHA-512",
			SASLUser: setup.AdminUser, SASLPasswordFile: setup.AdminPasswordFile(o.Dir)}
		plain := *st.Security
		plain.SASLMechanism = "PLAIN"
		if bootstrap, err = o.Factory.SecurityOpts(plain); err != nil {
			return nil, err
		}
	}
	if spec.ZooKeeper == setup.ZKEmbedded {
		st.Mode, st.Socket = ModeEmbedded, socket
	}
	for id := range spec.Brokers {
		st.Brokers = append(st.Brokers, BrokerRecord{
			ID: int32(id), Addr: spec.BrokerAddr(id), MetricsAddr: spec.MetricsAddr(id),
			Config: setup.ConfigPath(o.Dir, id), Log: filepath.Join(setup.BrokerDir(o.Dir, id), "broker.log"),
		})
	}
	if err := st.Save(); err != nil {
		return nil, err
	}
	if err := o.launch(ctx, st, install, spec); err != nil {
		o.abort(st)
		return nil, err
	}
	want := make([]int32, spec.Brokers)
	for i := range want {
		want[i] = int32(i)
	}
	reg, err := waitRegistered(ctx, o.Factory, st.Addrs(), want, o.Wait, bootstrap, func() error { return st.checkAlive() })
	if err != nil {
		o.abort(st)
		return nil, err
	}
	if spec.Secure {
		if err := o.createAdmin(ctx, st, bootstrap); err != nil {
			o.abort(st)
			return nil, err
		}
	}
	profileMsg, err := saveProfile(o.Factory, spec.Profile, st)
	if err != nil {
		return st, err
	}
	status := buildStatus(st, reg, nil)
	out := o.Factory.IO.Out
	return st, o.Output.Print(out, status, func() error {
		if err := writeStatus(out, status); err != nil {
			return err
		}
		if profileMsg != "" {
			fmt.Fprintln(out, profileMsg)
		}
		fmt.Fprintf(out, "Kill a broker with `ktool cluster kill ID`, start it again with `ktool cluster start ID`, stop all with `ktool cluster down`%s.\n", dirHint(o.Dir))
		return nil
	})
}

// dirHint is the --dir flag the follow-up commands need, when it is not the default.
func dirHint(dir string) string {
	if def, err := filepath.Abs(DefaultDir()); err == nil && def == dir {
		return ""
	}
	return " (add --dir " + dir + ")"
}

// launch starts the cluster's processes and records each in st as it goes.
func (o *UpOptions) launch(ctx context.Context, st *State, install zkinstall.Install, spec setup.Spec) error {
	w := o.Factory.IO.ErrOut
	if st.Mode == ModeEmbedded {
		cmd := exec.Command(o.Executable, "cluster", SuperviseCommand, "--dir", o.Dir)
		p, err := spawn(cmd, filepath.Join(o.Dir, "supervisor.log"))
		if err != nil {
			return err
		}
		st.Supervisor = p
		fmt.Fprintf(w, "Started the supervisor (pid %d) running %d brokers on the embedded coordination store.\n", p.PID, len(st.Brokers))
		return st.Save()
	}
	if install.Java != "" && len(spec.ZooKeeperPeers()) > 0 {
		if err := o.launchEnsemble(ctx, st, install, spec); err != nil {
			return err
		}
	} else if install.Java != "" {
		zdir := filepath.Join(o.Dir, "zookeeper")
		cmd, err := install.Command(context.WithoutCancel(ctx), zkinstall.Config{Dir: zdir, Port: spec.ZooKeeperPort})
		if err != nil {
			return err
		}
		p, err := spawn(cmd, filepath.Join(zdir, "zookeeper.log"))
		if err != nil {
			return err
		}
		st.ZooKeeperProcess = p
		if err := st.Save(); err != nil {
			return err
		}
		fmt.Fprintf(w, "Started ZooKeeper from %s (pid %d) on %s.\n", install.Source, p.PID, st.ZooKeeper)
		if err := waitZooKeeper(ctx, st.ZooKeeper, 60*time.Second, func() error {
			if !p.Alive() {
				return exitedError("ZooKeeper", p)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	for i := range st.Brokers {
		if err := o.launchBroker(st, &st.Brokers[i]); err != nil {
			return err
		}
	}
	return nil
}

// launchEnsemble starts the nodes of a local ZooKeeper ensemble, each with
// its data and log under DIR/zookeeper-<id>, and waits until every node
// serves (the ensemble has elected a leader).
func (o *UpOptions) launchEnsemble(ctx context.Context, st *State, install zkinstall.Install, spec setup.Spec) error {
	peers := spec.ZooKeeperPeers()
	addrs := strings.Split(st.ZooKeeper, ",")
	for i, p := range peers {
		zdir := filepath.Join(o.Dir, fmt.Sprintf("zookeeper-%d", p.ID))
		cmd, err := install.Command(context.WithoutCancel(ctx), zkinstall.Config{Dir: zdir, Port: spec.ZooKeeperPort + i, Ensemble: peers, MyID: p.ID})
		if err != nil {
			return err
		}
		proc, err := spawn(cmd, filepath.Join(zdir, "zookeeper.log"))
		if err != nil {
			return err
		}
		st.ZooKeeperEnsemble = append(st.ZooKeeperEnsemble, proc)
		if err := st.Save(); err != nil {
			return err
		}
		fmt.Fprintf(o.Factory.IO.ErrOut, "Started ZooKeeper node %d of %d from %s (pid %d) on %s.\n", p.ID, len(peers), install.Source, proc.PID, addrs[i])
	}
	for i, addr := range addrs {
		proc := st.ZooKeeperEnsemble[i]
		if err := waitServing(ctx, addr, 90*time.Second, func() error {
			if !proc.Alive() {
				return exitedError(fmt.Sprintf("ZooKeeper node %d", i+1), proc)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

func (o *UpOptions) launchBroker(st *State, b *BrokerRecord) error {
	cmd := exec.Command(o.Executable, "broker", "start", "--config", b.Config)
	p, err := spawn(cmd, b.Log)
	if err != nil {
		return err
	}
	b.Process = p
	fmt.Fprintf(o.Factory.IO.ErrOut, "Started broker %d (pid %d) on %s.\n", b.ID, p.PID, b.Addr)
	return st.Save()
}

// checkAlive fails when a process the cluster needs has exited.
func (st *State) checkAlive() error {
	if st.Mode == ModeEmbedded {
		if !st.Supervisor.Alive() {
			return exitedError("the supervisor", st.Supervisor)
		}
		return nil
	}
	if err := st.zooKeeperDown(); err != nil {
		return err
	}
	for _, b := range st.Brokers {
		if b.Process != nil && !b.Process.Alive() {
			return exitedError(fmt.Sprintf("broker %d", b.ID), b.Process)
		}
	}
	return nil
}

// abort stops what a failed up started.
func (o *UpOptions) abort(st *State) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	procs := []*Proc{st.Supervisor}
	for _, b := range st.Brokers {
		procs = append(procs, b.Process)
	}
	if _, err := stopProcs(ctx, procs, 10*time.Second); err != nil {
		fmt.Fprintf(o.Factory.IO.ErrOut, "stopping the brokers: %v\n", err)
	}
	if _, err := stopProcs(ctx, append([]*Proc{st.ZooKeeperProcess}, st.ZooKeeperEnsemble...), 10*time.Second); err != nil {
		fmt.Fprintf(o.Factory.IO.ErrOut, "stopping ZooKeeper: %v\n", err)
	}
}

// saveProfile records the cluster as a profile, current when there is no
// other current one.
func saveProfile(f *cmdutil.Factory, name string, st *State) (string, error) {
	if name == "" {
		return "", nil
	}
	cfg, err := f.Config()
	if err != nil {
		return "", err
	}
	cfg.Profiles[name] = &cmdutil.Profile{Brokers: st.Addrs(), Zookeeper: st.ZooKeeper, Security: st.Security}
	current := cfg.Current == "" || cfg.Current == name
	if current {
		cfg.Current = name
	}
	if err := cfg.Save(); err != nil {
		return "", fmt.Errorf("saving profile %s in %s: %w", name, cfg.Path(), err)
	}
	if current {
		return fmt.Sprintf("Profile %q (current) saved in %s: ktool commands now talk to this cluster.", name, cfg.Path()), nil
	}
	return fmt.Sprintf("Profile %q saved in %s; use it with --profile %s or `ktool profile use %s`.", name, cfg.Path(), name, name), nil
}

// createAdmin makes the SCRAM users of a secure cluster (both mechanisms):
// the admin (a super user) and the sample producer and consumer with their
// ACLs, through the brokers, authenticated with PLAIN as the admin.
func (o *UpOptions) createAdmin(ctx context.Context, st *State, bootstrap []kgo.Opt) error {
	users := map[string]string{}
	var err error
	if users[setup.AdminUser], err = setup.AdminPassword(st.Dir); err != nil {
		return err
	}
	for _, u := range setup.SampleUsers {
		if users[u], err = setup.UserPassword(st.Dir, u); err != nil {
			return err
		}
	}
	opts := append([]kgo.Opt{kgo.SeedBrokers(st.Addrs()...), kgo.ClientID("ktool-cluster")}, bootstrap...)
	cl, err := kgo.NewClient(append(opts, o.Factory.ClientOpts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var ups []kadm.UpsertSCRAM
	for _, u := range append([]string{setup.AdminUser}, setup.SampleUsers...) {
		for _, m := range []kadm.ScramMechanism{kadm.ScramSha256, kadm.ScramSha512} {
			ups = append(ups, kadm.UpsertSCRAM{User: u, Mechanism: m, Iterations: 4096, Password: users[u]})
		}
	}
	res, err := adm.AlterUserSCRAMs(rctx, nil, ups)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return fmt.Errorf("creating the SCRAM users: %w", err)
	}
	if err := createSampleACLs(rctx, adm); err != nil {
		return fmt.Errorf("creating the sample users' ACLs: %w", err)
	}
	w := o.Factory.IO.ErrOut
	fmt.Fprintf(w, "Secure cluster: SASL_SSL with SCRAM-SHA-512 as %q (a super user; password in %s), CA %s, client settings in %s.\n",
		setup.AdminUser, setup.AdminPasswordFile(st.Dir), setup.CAFile(st.Dir), filepath.Join(st.Dir, "client.properties"))
	writeSampleUsage(w, st)
	return nil
}

// sampleACLs are the sample users' grants: the producer may write (and
// describe) the topics named demo-*, which also lets it be an idempotent
// producer (KIP-679); the consumer may read (and describe) them and read the
// groups named demo-*.
func sampleACLs() []*kadm.ACLBuilder {
	prefixed := kadm.ACLPatternPrefixed
	return []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:"+setup.ProducerUser).AllowHosts("*").Topics(setup.DemoPrefix).
			ResourcePatternType(prefixed).Operations(kadm.OpWrite, kadm.OpDescribe),
		kadm.NewACLs().Allow("User:"+setup.ConsumerUser).AllowHosts("*").Topics(setup.DemoPrefix).
			ResourcePatternType(prefixed).Operations(kadm.OpRead, kadm.OpDescribe),
		kadm.NewACLs().Allow("User:" + setup.ConsumerUser).AllowHosts("*").Groups(setup.DemoPrefix).
			ResourcePatternType(prefixed).Operations(kadm.OpRead),
	}
}

func createSampleACLs(ctx context.Context, adm *kadm.Client) error {
	for _, b := range sampleACLs() {
		results, err := adm.CreateACLs(ctx, b)
		if err != nil {
			return err
		}
		for _, r := range results {
			if r.Err != nil {
				return fmt.Errorf("%s %s on %s %s: %w", r.Principal, r.Operation, r.Type, r.Name, cmdutil.WithMessage(r.Err, r.ErrMessage))
			}
		}
	}
	return nil
}

// writeSampleUsage says how to use the sample users.
func writeSampleUsage(w io.Writer, st *State) {
	addr := st.Addrs()[0]
	fmt.Fprintf(w, "Sample users (ACLs): %q may write topics %s*, %q may read them in groups %s*:\n",
		setup.ProducerUser, setup.DemoPrefix, setup.ConsumerUser, setup.DemoPrefix)
	for _, u := range setup.SampleUsers {
		fmt.Fprintf(w, "  %s: password in %s, client settings in %s\n", u, setup.UserPasswordFile(st.Dir, u), setup.UserClientConfig(st.Dir, u))
	}
	topic := setup.DemoPrefix + "x"
	fmt.Fprintf(w, "  ktool topic create %s -r %d   # as the admin\n", topic, min(len(st.Brokers), 3))
	fmt.Fprintf(w, "  echo hello | ktool --brokers %s --client-config %s produce %s\n", addr, setup.UserClientConfig(st.Dir, setup.ProducerUser), topic)
	fmt.Fprintf(w, "  ktool --brokers %s --client-config %s consume %s --group %sg\n", addr, setup.UserClientConfig(st.Dir, setup.ConsumerUser), topic, setup.DemoPrefix)
	fmt.Fprintf(w, "  kcat -b %s -X security.protocol=SASL_SSL -X sasl.mechanisms=SCRAM-SHA-512 -X ssl.ca.location=%s -X sasl.username=%s -X sasl.password=\"$(cat %s)\" -G %sg %s\n",
		addr, setup.CAFile(st.Dir), setup.ConsumerUser, setup.UserPasswordFile(st.Dir, setup.ConsumerUser), setup.DemoPrefix, topic)
}
