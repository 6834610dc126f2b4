package setup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/AlecAivazis/survey/v2"
	"github.com/AlecAivazis/survey/v2/terminal"
	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/internal/zkinstall"
	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// Cluster starts and inspects the local cluster kept in a directory.
type Cluster interface {
	// Up starts the cluster defined in dir and waits until it is up.
	Up(ctx context.Context, dir string) error
	// Running reports whether a process of the cluster in dir runs.
	Running(dir string) bool
}

// InitOptions are the inputs of `ktool cluster init`.
type InitOptions struct {
	Factory *cmdutil.Factory
	Spec    Spec
	Dir     string
	// Hosts is --hosts: generate a cluster for these machines instead (hosts.go).
	Hosts HostsSpec
	// ZooKeeperMode is --zookeeper-mode: local, external or embedded.
	ZooKeeperMode string
	Yes           bool
	Start         bool
	Force         bool

	// Changed says which flags were given; their questions are not asked.
	Changed func(flag string) bool
	// FindZooKeeper looks for a local ZooKeeper installation.
	FindZooKeeper func() (zkinstall.Install, error)
	// Cluster starts the cluster once the files are written (nil: never).
	Cluster Cluster
}

// NewInitCommand returns `ktool cluster init`. c starts the cluster when
// the user asks for it; defaultDir is --dir's default.
func NewInitCommand(f *cmdutil.Factory, c Cluster, defaultDir string, runF func(context.Context, *InitOptions) error) *cobra.Command {
	opts := &InitOptions{Factory: f, Spec: DefaultSpec(), FindZooKeeper: zkinstall.Find, Cluster: c}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Set up a local cluster interactively (or from flags) and write its files",
		Long: `Ask how the local cluster should look: number of brokers, host and ports,
data directory, ZooKeeper (start one locally, use an existing one, or the
embedded store), default partitions and replication factor,
min.insync.replicas, unclean leader election, automatic leader rebalancing,
and the clients' default assignor and compression. Each answer is checked
(ports free, replication factor at most the broker count, min.insync.replicas
at most the replication factor); a summary is shown; then it writes
DIR/cluster.yaml, DIR/broker-<id>/server.properties and DIR/client.properties,
and offers to start the cluster (` + "`ktool cluster up --from DIR`" + ` does later).

With --hosts h1,h2,h3 it writes a cluster for real machines instead, one
directory per host: server.properties (broker.id, listeners, advertised name,
broker.rack from --racks, log.dirs, zookeeper.connect of the ensemble), and on
the ZooKeeper hosts zoo.cfg with the server.N lines and myid, systemd units for
the broker and ZooKeeper, and a README.md of the steps; ` + "`ktool cluster check DIR`" + `
checks such a set. On a terminal without --hosts, the first question is
where the cluster runs; for real machines it then asks for the hosts, racks,
ZooKeeper hosts, port, data directory and output directory. Without a
terminal, --racks, --zookeeper-hosts, --broker-port or --data-dir without
--hosts is an error.

Every question has a flag; a question whose flag is given is not asked.
With --yes, or without a terminal, nothing is asked: flags and defaults are
used, and --start starts the cluster.`,
		Example: `  ktool cluster init
  ktool cluster init --yes --dir ./kc -n 3 --base-port 19092 --zookeeper-mode embedded --start
  ktool cluster init --hosts kafka1,kafka2,kafka3 --racks eu-1a,eu-1b,eu-1c --dir ./prod`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Changed = cmd.Flags().Changed
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			if len(opts.Hosts.Hosts) > 0 {
				return RunInitHosts(opts)
			}
			return RunInit(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	opts.Hosts = DefaultHostsSpec()
	hs := &opts.Hosts
	fl.StringSliceVar(&hs.Hosts, "hosts", nil, "real machines, one broker each: write per-host server.properties, zoo.cfg, myid and systemd units under --dir instead of a local cluster")
	fl.StringSliceVar(&hs.Racks, "racks", nil, "with --hosts: each host's broker.rack, in host order")
	fl.StringSliceVar(&hs.ZooKeeperHosts, "zookeeper-hosts", nil, "with --hosts: the hosts running the ZooKeeper ensemble (default: the first 1, 3 or 5)")
	fl.IntVar(&hs.Port, "broker-port", hs.Port, "with --hosts: the port every broker listens on")
	fl.StringVar(&hs.DataDir, "data-dir", hs.DataDir, "with --hosts: log.dirs on every host")
	s := &opts.Spec
	fl.StringVar(&opts.Dir, "dir", defaultDir, "data directory: the cluster's files, logs and data")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "ask nothing: use the flags and defaults")
	fl.BoolVar(&opts.Start, "start", false, "start the cluster once the files are written (asked when interactive)")
	fl.BoolVar(&opts.Force, "force", false, "replace the files of an existing cluster definition in the directory")
	fl.IntVarP(&s.Brokers, "num-brokers", "n", s.Brokers, "number of brokers")
	fl.StringVar(&s.Host, "host", s.Host, "host the brokers listen on and advertise")
	fl.IntVar(&s.BasePort, "base-port", s.BasePort, "port of broker 0; broker N listens on base-port+N")
	fl.IntVar(&s.MetricsBasePort, "metrics-base-port", s.MetricsBasePort, "metrics port of broker 0 (0: none)")
	fl.StringVar(&opts.ZooKeeperMode, "zookeeper-mode", "", "ZooKeeper: local (start one from a local installation), external or embedded")
	fl.StringVar(&s.ZooKeeperAddr, "zookeeper", "", "existing ZooKeeper host:port[/chroot] (implies --zookeeper-mode external)")
	fl.IntVar(&s.ZooKeeperPort, "zookeeper-port", s.ZooKeeperPort, "client port of the ZooKeeper started locally (of its node 1)")
	fl.IntVar(&s.ZooKeeperNodes, "zookeeper-nodes", s.ZooKeeperNodes, "ZooKeeper servers started locally: 1, or an ensemble of 3 or 5 (asked when interactive)")
	fl.IntVar(&s.Partitions, "partitions", s.Partitions, "num.partitions: default partition count of new topics")
	fl.IntVar(&s.ReplicationFactor, "replication-factor", s.ReplicationFactor, "default.replication.factor of new topics")
	fl.IntVar(&s.MinInsyncReplicas, "min-insync-replicas", s.MinInsyncReplicas, "min.insync.replicas")
	fl.BoolVar(&s.UncleanElection, "unclean-leader-election", s.UncleanElection, "unclean.leader.election.enable")
	fl.BoolVar(&s.AutoLeaderRebalance, "auto-leader-rebalance", s.AutoLeaderRebalance, "auto.leader.rebalance.enable")
	fl.BoolVar(&s.Secure, "secure", s.Secure, "SASL_SSL with SCRAM for clients, TLS between brokers and ACLs (certificates, an admin super user and sample producer/consumer users made under the directory)")
	fl.StringVar(&s.Assignor, "assignor", s.Assignor, "clients' default assignor: "+strings.Join(Assignors(), ", "))
	fl.StringVar(&s.Compression, "compression", s.Compression, "compression.type: "+strings.Join(Compressions(), ", "))
	fl.StringVar(&s.Profile, "profile-name", s.Profile, "profile saved when the cluster is up (\"\": none)")
	_ = cmd.RegisterFlagCompletionFunc("zookeeper-mode", cobra.FixedCompletions([]string{ZKLocal, ZKExternal, ZKEmbedded}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("assignor", cobra.FixedCompletions(Assignors(), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("compression", cobra.FixedCompletions(Compressions(), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.MarkFlagDirname("dir")
	return cmd
}

// RunInit asks the questions (or takes the flags), writes the files and
// starts the cluster when asked to.
func RunInit(ctx context.Context, o *InitOptions) error {
	if o.Changed == nil {
		o.Changed = func(string) bool { return false }
	}
	if o.FindZooKeeper == nil {
		o.FindZooKeeper = zkinstall.Find
	}
	interactive := !o.Yes && o.Factory.IO.CanPrompt()
	var p *prompter
	if interactive {
		var err error
		if p, err = newPrompter(o.Factory.IO); err != nil {
			return err
		}
	}
	if flag := o.hostsOnlyFlag(); flag != "" && !interactive {
		return cmdutil.Usagef("--%s is for a cluster on real machines: name them with --hosts h1,h2,h3 (without a terminal nothing can be asked)", flag)
	}
	if interactive {
		real := o.hostsOnlyFlag() != ""
		if !real {
			where := whereLocal
			if err := p.chooseWithHelp(&where, "Where will the cluster run?", []string{whereLocal, whereHosts},
				"A local cluster runs every broker on this machine (ktool cluster up); real machines get one broker each and the files to install there."); err != nil {
				return err
			}
			real = where == whereHosts
		}
		if real {
			if err := o.askHosts(p); err != nil {
				return err
			}
			ok, err := p.confirm(fmt.Sprintf("Write the files of %d brokers under %s?", len(o.Hosts.Hosts), o.Dir), true)
			if err != nil {
				return err
			}
			if !ok {
				fmt.Fprintln(o.Factory.IO.Out, "Nothing written.")
				return nil
			}
			return RunInitHosts(o)
		}
	}
	if err := o.resolveZooKeeperFlags(); err != nil {
		return err
	}
	if !o.Changed("replication-factor") && !o.Changed("min-insync-replicas") {
		o.Spec.FitReplication()
	}
	if interactive {
		if err := o.ask(p); err != nil {
			return err
		}
	}
	dir, err := o.checkDir(p)
	if err != nil {
		return err
	}
	if err := o.Spec.Validate(); err != nil {
		return cmdutil.UsageError(err)
	}
	if err := o.Spec.CheckPortsFree(); err != nil {
		return cmdutil.UsageError(err)
	}
	out := o.Factory.IO.Out
	writeSummary(out, dir, o.Spec)
	if interactive {
		ok, err := p.confirm("Write these files?", true)
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintln(out, "Nothing written.")
			return nil
		}
	}
	written, err := o.Spec.WriteFiles(dir)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "Wrote:")
	for _, w := range written {
		fmt.Fprintf(out, "  %s\n", w)
	}
	start := o.Start
	if interactive && !o.Changed("start") {
		if start, err = p.confirm("Start the cluster now?", true); err != nil {
			return err
		}
	}
	if !start || o.Cluster == nil {
		fmt.Fprintf(out, "Start it with: ktool cluster up --from %s\n", dir)
		return nil
	}
	return o.Cluster.Up(ctx, dir)
}

// resolveZooKeeperFlags turns --zookeeper-mode and --zookeeper into the spec's mode.
func (o *InitOptions) resolveZooKeeperFlags() error {
	s := &o.Spec
	switch {
	case o.Changed("zookeeper") && o.ZooKeeperMode != "" && o.ZooKeeperMode != ZKExternal:
		return cmdutil.Usagef("--zookeeper is an existing ZooKeeper; it does not go with --zookeeper-mode %s", o.ZooKeeperMode)
	case o.Changed("zookeeper"):
		s.ZooKeeper = ZKExternal
	case o.ZooKeeperMode == ZKExternal:
		return cmdutil.Usagef("--zookeeper-mode external needs --zookeeper host:port")
	case o.ZooKeeperMode == ZKLocal || o.ZooKeeperMode == ZKEmbedded:
		s.ZooKeeper = o.ZooKeeperMode
	case o.ZooKeeperMode != "":
		return cmdutil.Usagef("--zookeeper-mode %q: want local, external or embedded", o.ZooKeeperMode)
	default:
		// Unattended and unanswered: a local ZooKeeper when installed.
		if _, err := o.FindZooKeeper(); err == nil {
			s.ZooKeeper = ZKLocal
		} else {
			s.ZooKeeper = ZKEmbedded
		}
	}
	if s.ZooKeeper == ZKLocal {
		if _, err := o.FindZooKeeper(); err != nil {
			return cmdutil.UsageError(err)
		}
	}
	return nil
}

func (o *InitOptions) zookeeperAsked() bool {
	return o.Changed("zookeeper") || o.ZooKeeperMode != ""
}

// ask puts the questions whose flags were not given, checking each answer.
func (o *InitOptions) ask(p *prompter) error {
	s := &o.Spec
	fmt.Fprintln(o.Factory.IO.Out, "Set up a local Kafka-compatible cluster. Press Enter to keep the value in brackets.")
	if !o.Changed("num-brokers") {
		if err := p.intInput(&s.Brokers, "Number of brokers:", "Brokers get ids 0..N-1.", func(n int) error {
			if n < 1 || n > 100 {
				return errors.New("between 1 and 100")
			}
			return nil
		}); err != nil {
			return err
		}
		s.FitReplication()
	}
	if !o.Changed("host") {
		if err := p.input(&s.Host, "Host the brokers listen on:", "Clients connect to HOST:PORT; 127.0.0.1 keeps the cluster local.", func(h string) error {
			if strings.TrimSpace(h) == "" || strings.ContainsAny(h, " /,") {
				return errors.New("a host name or IP address")
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if !o.Changed("base-port") {
		if err := p.intInput(&s.BasePort, "Port of broker 0 (broker N gets port+N):", "", func(port int) error {
			return portsFree(s.Host, port, s.Brokers)
		}); err != nil {
			return err
		}
	}
	if !o.Changed("metrics-base-port") {
		if err := p.intInput(&s.MetricsBasePort, "Metrics port of broker 0 (0 for none):", "Each broker serves /metrics, /healthz and /readyz on port+N.", func(port int) error {
			if port == 0 {
				return nil
			}
			if port >= s.BasePort && port < s.BasePort+s.Brokers || s.BasePort >= port && s.BasePort < port+s.Brokers {
				return fmt.Errorf("overlaps the broker ports %d-%d", s.BasePort, s.BasePort+s.Brokers-1)
			}
			return portsFree(s.Host, port, s.Brokers)
		}); err != nil {
			return err
		}
	}
	if !o.Changed("dir") {
		if err := p.input(&o.Dir, "Data directory:", "Holds cluster.yaml, each broker's server.properties, log and data.", func(d string) error {
			if strings.TrimSpace(d) == "" {
				return errors.New("a directory")
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if !o.zookeeperAsked() {
		if err := o.askZooKeeper(p); err != nil {
			return err
		}
	}
	if !o.Changed("partitions") {
		if err := p.intInput(&s.Partitions, "Default partitions of new topics (num.partitions):", "", func(n int) error {
			if n < 1 {
				return errors.New("at least 1")
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if !o.Changed("replication-factor") {
		if err := p.intInput(&s.ReplicationFactor, "Default replication factor:", "How many brokers hold a copy of each partition.", func(n int) error {
			if n < 1 || n > s.Brokers {
				return fmt.Errorf("between 1 and the broker count (%d)", s.Brokers)
			}
			return nil
		}); err != nil {
			return err
		}
		if s.MinInsyncReplicas > s.ReplicationFactor {
			s.MinInsyncReplicas = s.ReplicationFactor
		}
	}
	if !o.Changed("min-insync-replicas") {
		if err := p.intInput(&s.MinInsyncReplicas, "min.insync.replicas:", "Least ISR size for acks=all writes; below it producers get NOT_ENOUGH_REPLICAS.", func(n int) error {
			if n < 1 || n > s.ReplicationFactor {
				return fmt.Errorf("between 1 and the replication factor (%d)", s.ReplicationFactor)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if !o.Changed("unclean-leader-election") {
		v, err := p.confirm("Allow unclean leader election (an out-of-sync replica may lead, losing data)?", s.UncleanElection)
		if err != nil {
			return err
		}
		s.UncleanElection = v
	}
	if !o.Changed("auto-leader-rebalance") {
		v, err := p.confirm("Move leadership back to preferred replicas automatically?", s.AutoLeaderRebalance)
		if err != nil {
			return err
		}
		s.AutoLeaderRebalance = v
	}
	if !o.Changed("secure") {
		v, err := p.confirm("Secure the cluster (SASL_SSL + SCRAM, TLS between brokers, ACLs, admin and sample users)?", s.Secure)
		if err != nil {
			return err
		}
		s.Secure = v
	}
	if !o.Changed("assignor") {
		if err := p.choose(&s.Assignor, "Clients' default partition assignor:", Assignors()); err != nil {
			return err
		}
	}
	if !o.Changed("compression") {
		if err := p.choose(&s.Compression, "Compression (compression.type):", Compressions()); err != nil {
			return err
		}
	}
	return nil
}

// The answers of the ZooKeeper question.
const (
	zkAnswerLocal    = "start one locally"
	zkAnswerExternal = "use an existing ZooKeeper"
	zkAnswerEmbedded = "no ZooKeeper: the embedded store, all brokers in one process"
)

func (o *InitOptions) askZooKeeper(p *prompter) error {
	s := &o.Spec
	options := []string{zkAnswerExternal, zkAnswerEmbedded}
	localNote := ""
	if in, err := o.FindZooKeeper(); err == nil {
		options = append([]string{zkAnswerLocal}, options...)
		localNote = " (found " + in.Source + ")"
	}
	def := map[string]string{ZKLocal: zkAnswerLocal, ZKExternal: zkAnswerExternal}[s.ZooKeeper]
	if def == "" || def == zkAnswerLocal && localNote == "" {
		def = zkAnswerEmbedded
	}
	answer := def
	if err := p.chooseWithHelp(&answer, "ZooKeeper:", options, "A local ZooKeeper runs as a process of the cluster"+localNote+"."); err != nil {
		return err
	}
	switch answer {
	case zkAnswerLocal:
		s.ZooKeeper = ZKLocal
		nodes := strconv.Itoa(max(1, s.ZooKeeperNodes))
		if err := p.chooseWithHelp(&nodes, "ZooKeeper nodes:", []string{"1", "3", "5"},
			"3 or 5 nodes make an ensemble that keeps serving while a minority of its nodes is down; "+
				"node i listens on the client port+i, its quorum and election ports on +100+i and +200+i."); err != nil {
			return err
		}
		s.ZooKeeperNodes, _ = strconv.Atoi(nodes)
		return p.intInput(&s.ZooKeeperPort, "ZooKeeper client port:", "", func(port int) error {
			trial := *s
			trial.ZooKeeperPort = port
			if err := trial.Validate(); err != nil {
				return err
			}
			for _, p := range trial.zkPorts() {
				if err := portsFree("127.0.0.1", p, 1); err != nil {
					return err
				}
			}
			return nil
		})
	case zkAnswerExternal:
		s.ZooKeeper = ZKExternal
		if s.ZooKeeperAddr == "" {
			s.ZooKeeperAddr = "127.0.0.1:2181"
		}
		return p.input(&s.ZooKeeperAddr, "ZooKeeper address (host:port[,host:port][/chroot]):", "", ValidZooKeeperAddr)
	default:
		s.ZooKeeper = ZKEmbedded
		return nil
	}
}

// checkDir makes the directory absolute and refuses to overwrite another
// cluster definition unless told to.
func (o *InitOptions) checkDir(p *prompter) (string, error) {
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return "", err
	}
	if o.Cluster != nil && o.Cluster.Running(dir) {
		return "", fmt.Errorf("a cluster runs from %s; stop it first with `ktool cluster down --dir %s`", dir, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, SpecFile)); err == nil && !o.Force {
		if p == nil {
			return "", cmdutil.Usagef("%s already holds a cluster definition; pass --force to replace it", dir)
		}
		ok, err := p.confirm(fmt.Sprintf("%s already holds a cluster definition. Replace it?", dir), false)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", errors.New("kept the existing cluster definition; nothing written")
		}
	}
	return dir, nil
}

func portsFree(host string, base, n int) error {
	if base < 1 || base+n-1 > 65535 {
		return fmt.Errorf("ports %d-%d are not all valid", base, base+n-1)
	}
	s := Spec{Brokers: n, Host: host, BasePort: base}
	return s.CheckPortsFree()
}

func writeSummary(w io.Writer, dir string, s Spec) {
	zk := map[string]string{
		ZKLocal:    "started locally on " + s.ZooKeeperConnect(),
		ZKExternal: s.ZooKeeperAddr,
		ZKEmbedded: "none: embedded store, brokers in one supervisor process",
	}[s.ZooKeeper]
	metrics := "none"
	if s.MetricsBasePort != 0 {
		metrics = fmt.Sprintf("%s-%d", s.MetricsAddr(0), s.MetricsBasePort+s.Brokers-1)
	}
	profile := s.Profile
	if profile == "" {
		profile = "none"
	}
	fmt.Fprintln(w, "\nSummary")
	rows := [][2]string{
		{"Brokers", fmt.Sprintf("%d (ids 0-%d) on %s-%d", s.Brokers, s.Brokers-1, s.BrokerAddr(0), s.BasePort+s.Brokers-1)},
		{"Metrics", metrics},
		{"Data directory", dir},
		{"ZooKeeper", zk},
		{"num.partitions", strconv.Itoa(s.Partitions)},
		{"default.replication.factor", strconv.Itoa(s.ReplicationFactor)},
		{"min.insync.replicas", strconv.Itoa(s.MinInsyncReplicas)},
		{"unclean.leader.election", strconv.FormatBool(s.UncleanElection)},
		{"auto.leader.rebalance", strconv.FormatBool(s.AutoLeaderRebalance)},
		{"Security", security(s)},
		{"Default assignor", s.Assignor},
		{"compression.type", s.Compression},
		{"Profile", profile},
	}
	for _, r := range rows {
		fmt.Fprintf(w, "  %-27s %s\n", r[0], r[1])
	}
	fmt.Fprintln(w)
}

// prompter asks questions on the terminal.
type prompter struct {
	opts []survey.AskOpt
}

func newPrompter(ios *cmdutil.IOStreams) (*prompter, error) {
	in, ok := ios.In.(terminal.FileReader)
	if !ok {
		return nil, errors.New("prompting needs a terminal on stdin")
	}
	out, ok := ios.Out.(terminal.FileWriter)
	if !ok {
		return nil, errors.New("prompting needs a terminal on stdout")
	}
	return &prompter{opts: []survey.AskOpt{survey.WithStdio(in, out, ios.ErrOut)}}, nil
}

func (p *prompter) ask(q survey.Prompt, resp any, validate survey.Validator) error {
	opts := p.opts
	if validate != nil {
		opts = append(append([]survey.AskOpt{}, opts...), survey.WithValidator(validate))
	}
	err := survey.AskOne(q, resp, opts...)
	if errors.Is(err, terminal.InterruptErr) {
		return errors.New("interrupted; nothing written")
	}
	return err
}

func (p *prompter) input(v *string, msg, help string, check func(string) error) error {
	ans := *v
	err := p.ask(&survey.Input{Message: msg, Default: *v, Help: help}, &ans, func(a any) error {
		return check(strings.TrimSpace(fmt.Sprint(a)))
	})
	if err != nil {
		return err
	}
	*v = strings.TrimSpace(ans)
	return nil
}

func (p *prompter) intInput(v *int, msg, help string, check func(int) error) error {
	s := strconv.Itoa(*v)
	if err := p.input(&s, msg, help, func(a string) error {
		n, err := strconv.Atoi(a)
		if err != nil {
			return errors.New("a whole number")
		}
		return check(n)
	}); err != nil {
		return err
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return err
	}
	*v = n
	return nil
}

func (p *prompter) confirm(msg string, def bool) (bool, error) {
	v := def
	err := p.ask(&survey.Confirm{Message: msg, Default: def}, &v, nil)
	return v, err
}

func (p *prompter) choose(v *string, msg string, options []string) error {
	return p.chooseWithHelp(v, msg, options, "")
}

func (p *prompter) chooseWithHelp(v *string, msg string, options []string, help string) error {
	ans := *v
	if err := p.ask(&survey.Select{Message: msg, Options: options, Default: *v, Help: help}, &ans, nil); err != nil {
		return err
	}
	*v = ans
	return nil
}

func security(s Spec) string {
	if !s.Secure {
		return "none (PLAINTEXT)"
	}
	return fmt.Sprintf("SASL_SSL + SCRAM-SHA-512 (super user %s; sample users %s and %s with ACLs on %s*) on the broker ports, SSL between brokers on %d-%d", AdminUser, ProducerUser, ConsumerUser, DemoPrefix, s.BasePort+s.Brokers, s.BasePort+2*s.Brokers-1)
}

// RunInitHosts writes the files of a cluster on the hosts in o.Hosts.
func RunInitHosts(o *InitOptions) error {
	h := o.Hosts
	h.Partitions = o.Spec.Partitions
	n := len(h.Hosts)
	h.ReplicationFactor, h.MinInsyncReplicas = o.Spec.ReplicationFactor, o.Spec.MinInsyncReplicas
	if !o.Changed("replication-factor") {
		h.ReplicationFactor = min(3, n)
	}
	if !o.Changed("min-insync-replicas") {
		h.MinInsyncReplicas = max(1, h.ReplicationFactor-1)
	}
	h.Resolve()
	if err := h.Validate(); err != nil {
		return cmdutil.UsageError(err)
	}
	files := h.Files()
	if !o.Force {
		for name := range files {
			if _, err := os.Stat(filepath.Join(o.Dir, name)); err == nil {
				return cmdutil.Usagef("%s already exists (pass --force to replace the set)", filepath.Join(o.Dir, name))
			}
		}
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := filepath.Join(o.Dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			return err
		}
	}
	problems, err := CheckDir(o.Dir)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return report(o.Factory.IO.Out, o.Dir, problems)
	}
	_, err = fmt.Fprintf(o.Factory.IO.Out, "Wrote the files of %d brokers (ZooKeeper on %s) under %s; %s says what to do with them.\n",
		n, strings.Join(h.ZooKeeperHosts, ", "), o.Dir, filepath.Join(o.Dir, "README.md"))
	return err
}

// The answers of "Where will the cluster run?".
const (
	whereLocal = "this machine (a local cluster)"
	whereHosts = "real machines (one broker per host)"
)

// hostsOnlyFlag names a flag given that only a cluster on real machines
// uses, or "".
func (o *InitOptions) hostsOnlyFlag() string {
	for _, f := range []string{"racks", "zookeeper-hosts", "broker-port", "data-dir"} {
		if o.Changed(f) {
			return f
		}
	}
	return ""
}

// askHosts asks for what --hosts and its companion flags say; a question
// whose flag was given is not asked.
func (o *InitOptions) askHosts(p *prompter) error {
	h := &o.Hosts
	fmt.Fprintln(o.Factory.IO.Out, "Set up a cluster on real machines: one broker per host, a ZooKeeper ensemble on some of them.")
	hosts := ""
	if err := p.input(&hosts, "Hosts, one broker each (names or addresses, comma-separated):",
		"Broker ids follow this order, from 1. The names must resolve on every host.", func(v string) error {
			return checkHostNames(splitList(v))
		}); err != nil {
		return err
	}
	h.Hosts = splitList(hosts)
	if !o.Changed("racks") {
		racks := ""
		if err := p.input(&racks, "Racks, one per host in the same order (empty: no racks):",
			"broker.rack of each broker: replicas of a partition are placed in different racks.", func(v string) error {
				if r := splitList(v); len(r) > 0 && len(r) != len(h.Hosts) {
					return fmt.Errorf("%d racks for %d hosts", len(r), len(h.Hosts))
				}
				return nil
			}); err != nil {
			return err
		}
		h.Racks = splitList(racks)
	}
	if !o.Changed("zookeeper-hosts") {
		zk := strings.Join(h.Hosts[:ensembleSize(len(h.Hosts))], ",")
		if err := p.input(&zk, "Hosts of the ZooKeeper ensemble (an odd number of them):",
			"An ensemble of 3 survives the loss of one node, of 5 two.", func(v string) error {
				zk := splitList(v)
				if len(zk)%2 == 0 {
					return errors.New("an odd number of hosts")
				}
				for _, z := range zk {
					if !slices.Contains(h.Hosts, z) {
						return fmt.Errorf("%s is not one of the hosts", z)
					}
				}
				return nil
			}); err != nil {
			return err
		}
		h.ZooKeeperHosts = splitList(zk)
	}
	if !o.Changed("broker-port") {
		if err := p.intInput(&h.Port, "Port every broker listens on:", "", func(port int) error {
			if port < 1 || port > 65535 {
				return errors.New("a port between 1 and 65535")
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if !o.Changed("data-dir") {
		if err := p.input(&h.DataDir, "Data directory on every host (log.dirs; comma-separated for several disks):", "", func(v string) error {
			if strings.TrimSpace(v) == "" {
				return errors.New("a directory")
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if !o.Changed("dir") {
		if err := p.input(&o.Dir, "Write the files under:", "One directory per host is made in it.", func(v string) error {
			if strings.TrimSpace(v) == "" {
				return errors.New("a directory")
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// splitList splits a comma-separated answer, dropping blanks.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
