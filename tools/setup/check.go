package setup

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/broker/config"
	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// CheckOptions are the inputs of `ktool cluster check`.
type CheckOptions struct {
	Factory *cmdutil.Factory
	Dir     string
}

// NewCheckCommand returns `ktool cluster check DIR`.
func NewCheckCommand(f *cmdutil.Factory) *cobra.Command {
	opts := &CheckOptions{Factory: f}
	return &cobra.Command{
		Use:   "check DIR",
		Short: "Check a set of per-host broker and ZooKeeper configs before deploying it",
		Long: `Check reads DIR/*/server.properties (and zoo.cfg and myid where present),
as cluster init --hosts writes them, and reports what would break the cluster:
broker ids that repeat, brokers that do not share one zookeeper.connect, a
listener that does not parse or an advertised address two brokers share or
whose port is not a listener's, a replication factor above the broker count,
min.insync.replicas not below the replication factor, ZooKeeper hosts whose
server.N lines differ or whose myid is not theirs, and a zookeeper.connect
naming no ensemble member. It exits 3 when it found problems.`,
		Example: `  ktool cluster init --hosts kafka1,kafka2,kafka3 --dir ./prod
  ktool cluster check ./prod`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = args[0]
			problems, err := CheckDir(opts.Dir)
			if err != nil {
				return err
			}
			return report(f.IO.Out, opts.Dir, problems)
		},
	}
}

func report(w io.Writer, dir string, problems []string) error {
	if len(problems) == 0 {
		_, err := fmt.Fprintf(w, "%s: no problems found.\n", dir)
		return err
	}
	fmt.Fprintf(w, "%s: %d problems:\n", dir, len(problems))
	for _, p := range problems {
		fmt.Fprintf(w, "  - %s\n", p)
	}
	return cmdutil.ProblemsFound()
}

type hostFiles struct {
	host  string
	props map[string]string
	zoo   map[string]string
	myid  string
}

func readProps(path string) (map[string]string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return config.ParseProperties(io.LimitReader(fh, 1<<20))
}

// CheckDir lists the problems of the configs under dir; an error means the
// set could not be read at all.
func CheckDir(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, cmdutil.UsageError(err)
	}
	var hosts []hostFiles
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		props, err := readProps(filepath.Join(p, "server.properties"))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(p, "server.properties"), err)
		}
		h := hostFiles{host: e.Name(), props: props}
		if zoo, err := readProps(filepath.Join(p, "zoo.cfg")); err == nil {
			h.zoo = zoo
			if id, err := os.ReadFile(filepath.Join(p, "myid")); err == nil {
				h.myid = strings.TrimSpace(string(id))
			}
		}
		hosts = append(hosts, h)
	}
	if len(hosts) == 0 {
		return nil, cmdutil.Usagef("%s holds no HOST/server.properties", dir)
	}
	return checkHosts(hosts), nil
}

func checkHosts(hosts []hostFiles) []string {
	var problems []string
	add := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	ids := map[string]string{}
	advertised := map[string]string{}
	connects := map[string][]string{}
	for _, h := range hosts {
		if _, err := config.NewBroker(h.props); err != nil {
			add("%s: %v", h.host, err)
		}
		id := h.props["broker.id"]
		switch {
		case id == "" || id == "-1":
			add("%s: no broker.id: give every broker a fixed one", h.host)
		case ids[id] != "":
			add("%s and %s both have broker.id %s", ids[id], h.host, id)
		default:
			ids[id] = h.host
		}
		ports := map[string]bool{}
		for _, l := range config.SplitList(h.props["listeners"]) {
			u, err := url.Parse(l)
			if err != nil || u.Port() == "" {
				add("%s: listener %q is not NAME://host:port", h.host, l)
				continue
			}
			ports[u.Port()] = true
		}
		adv := h.props["advertised.listeners"]
		if adv == "" {
			adv = h.props["listeners"]
		}
		for _, l := range config.SplitList(adv) {
			u, err := url.Parse(l)
			if err != nil || u.Port() == "" {
				add("%s: advertised listener %q is not NAME://host:port", h.host, l)
				continue
			}
			if u.Hostname() == "" || u.Hostname() == "0.0.0.0" {
				add("%s: advertised listener %q has no address clients can reach", h.host, l)
			}
			if !ports[u.Port()] {
				add("%s: advertised port %s is not the port of any of its listeners", h.host, u.Port())
			}
			if other, ok := advertised[u.Host]; ok {
				add("%s and %s both advertise %s", other, h.host, u.Host)
			}
			advertised[u.Host] = h.host
		}
		zc := h.props["zookeeper.connect"]
		connects[zc] = append(connects[zc], h.host)
	}
	if len(connects) > 1 {
		var kinds []string
		for zc, hs := range connects {
			kinds = append(kinds, fmt.Sprintf("%q on %s", zc, strings.Join(hs, ",")))
		}
		sort.Strings(kinds)
		add("the brokers do not share one zookeeper.connect: %s", strings.Join(kinds, "; "))
	}
	n := len(hosts)
	for _, h := range hosts {
		rf := intProp(h.props, "default.replication.factor", 1)
		minISR := intProp(h.props, "min.insync.replicas", 1)
		if rf > n {
			add("%s: default.replication.factor %d is more than the %d brokers", h.host, rf, n)
		}
		if off := intProp(h.props, "offsets.topic.replication.factor", 3); off > n {
			add("%s: offsets.topic.replication.factor %d is more than the %d brokers: consumer groups will not work", h.host, off, n)
		}
		if rf > 1 && minISR >= rf {
			add("%s: min.insync.replicas %d is not below default.replication.factor %d: one broker down stops acks=all writes", h.host, minISR, rf)
		}
	}
	problems = append(problems, checkEnsemble(hosts, connects)...)
	return problems
}

func intProp(props map[string]string, key string, def int) int {
	if v, ok := props[key]; ok {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			return n
		}
	}
	return def
}

func checkEnsemble(hosts []hostFiles, connects map[string][]string) []string {
	var problems []string
	add := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	var servers string
	members := map[string]string{} // host -> id
	clientPort := ""
	for _, h := range hosts {
		if h.zoo == nil {
			continue
		}
		var lines []string
		for k, v := range h.zoo {
			if strings.HasPrefix(k, "server.") {
				lines = append(lines, k+"="+v)
			}
		}
		sort.Strings(lines)
		s := strings.Join(lines, " ")
		if servers == "" {
			servers = s
			for _, l := range lines {
				k, v, _ := strings.Cut(l, "=")
				host, _, _ := strings.Cut(v, ":")
				members[host] = strings.TrimPrefix(k, "server.")
			}
			clientPort = h.zoo["clientPort"]
		} else if s != servers {
			add("%s: its zoo.cfg server.N lines differ from the other ZooKeeper hosts'", h.host)
		}
		if id, ok := members[h.host]; !ok {
			add("%s: has a zoo.cfg but is not in its server.N lines", h.host)
		} else if h.myid != id {
			add("%s: myid is %q but zoo.cfg names it server.%s", h.host, h.myid, id)
		}
	}
	if servers == "" {
		return problems
	}
	if len(members)%2 == 0 {
		add("the ZooKeeper ensemble has %d members: use an odd number", len(members))
	}
	for zc := range connects {
		if i := strings.Index(zc, "/"); i >= 0 {
			zc = zc[:i] // the chroot
		}
		for _, hp := range strings.Split(zc, ",") {
			host, port, ok := strings.Cut(strings.TrimSpace(hp), ":")
			if _, member := members[host]; !member {
				add("zookeeper.connect names %s, which is not a member of the ensemble", hp)
			} else if ok && clientPort != "" && port != clientPort {
				add("zookeeper.connect names %s, but ZooKeeper's clientPort is %s", hp, clientPort)
			}
		}
	}
	return problems
}
