package setup

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ktoolhq/ktool/broker/config"
	"github.com/ktoolhq/ktool/internal/zkinstall"
)

// How a local cluster is coordinated.
const (
	// ZKAuto starts ZooKeeper from a local installation when there is one,
	// else runs the brokers on the embedded store.
	ZKAuto = "auto"
	// ZKLocal starts ZooKeeper from a local installation, as a child of the cluster.
	ZKLocal = "local"
	// ZKExternal uses an existing ZooKeeper (Spec.ZooKeeperAddr).
	ZKExternal = "external"
	// ZKEmbedded runs the brokers in one process on the embedded store.
	ZKEmbedded = "embedded"
)

// Assignors lists the choices of the clients' default assignor.
func Assignors() []string { return []string{"range", "roundrobin", "sticky", "cooperative-sticky"} }

// Compressions lists the choices of compression.type.
func Compressions() []string {
	return []string{"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"}
}

// SpecFile is the name of the cluster file in a cluster directory.
const SpecFile = "cluster.yaml"

// Spec defines a local cluster. It is kept in DIR/cluster.yaml, which
// `ktool cluster init` writes and `ktool cluster up` reads.
type Spec struct {
	Brokers int    `json:"brokers" yaml:"brokers"`
	Host    string `json:"host" yaml:"host"`
	// BasePort is broker 0's port; broker N listens on BasePort+N.
	BasePort int `json:"base_port" yaml:"base_port"`
	// MetricsBasePort is broker 0's metrics port (0: no metrics listener).
	MetricsBasePort int `json:"metrics_base_port" yaml:"metrics_base_port"`

	ZooKeeper     string `json:"zookeeper" yaml:"zookeeper"`
	ZooKeeperAddr string `json:"zookeeper_address,omitempty" yaml:"zookeeper_address,omitempty"`
	ZooKeeperPort int    `json:"zookeeper_port,omitempty" yaml:"zookeeper_port,omitempty"`
	// ZooKeeperNodes is how many ZooKeeper servers are started locally: 1 (or
	// 0), or an ensemble of 3 or 5 on the client ports ZooKeeperPort+i, with
	// their quorum ports at ZooKeeperPort+100+i and election ports at
	// ZooKeeperPort+200+i.
	ZooKeeperNodes int `json:"zookeeper_nodes,omitempty" yaml:"zookeeper_nodes,omitempty"`

	Partitions          int  `json:"num_partitions" yaml:"num_partitions"`
	ReplicationFactor   int  `json:"default_replication_factor" yaml:"default_replication_factor"`
	MinInsyncReplicas   int  `json:"min_insync_replicas" yaml:"min_insync_replicas"`
	UncleanElection     bool `json:"unclean_leader_election" yaml:"unclean_leader_election"`
	AutoLeaderRebalance bool `json:"auto_leader_rebalance" yaml:"auto_leader_rebalance"`

	// Assignor and Compression are the clients' defaults, written to
	// client.properties; Compression is also the brokers' compression.type.
	Assignor    string `json:"assignor" yaml:"assignor"`
	Compression string `json:"compression" yaml:"compression"`

	// Profile names the ktool profile saved when the cluster is up ("" saves none).
	Profile string `json:"profile" yaml:"profile"`
	// Secure runs SASL_SSL with SCRAM on the brokers' ports and TLS with client
	// certificates between brokers on the ports after them; certificates and
	// passwords are made under the cluster directory.
	Secure bool `json:"secure,omitempty" yaml:"secure,omitempty"`
	// Settings are more server.properties settings for every broker.
	Settings map[string]string `json:"settings,omitempty" yaml:"settings,omitempty"`
}

// DefaultSpec is a three-broker cluster on 127.0.0.1:9092-9094 set up for
// the replication experiments: replication factor 3 with min.insync.replicas 2.
func DefaultSpec() Spec {
	return Spec{
		Brokers: 3, Host: "127.0.0.1", BasePort: 9092, MetricsBasePort: 0,
		ZooKeeper: ZKAuto, ZooKeeperPort: 2181, ZooKeeperNodes: 1,
		Partitions: 3, ReplicationFactor: 3, MinInsyncReplicas: 2,
		AutoLeaderRebalance: true,
		Assignor:            "range", Compression: "producer",
		Profile: "local",
	}
}

// FitReplication lowers the replication factor and min.insync.replicas to
// what the broker count allows, keeping min.insync.replicas below the
// replication factor when it can.
func (s *Spec) FitReplication() {
	if s.ReplicationFactor > s.Brokers {
		s.ReplicationFactor = max(1, s.Brokers)
	}
	if s.MinInsyncReplicas >= s.ReplicationFactor {
		s.MinInsyncReplicas = max(1, s.ReplicationFactor-1)
	}
}

// Validate checks every answer against the others.
func (s Spec) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if s.Brokers < 1 || s.Brokers > 100 {
		bad("brokers must be between 1 and 100, got %d", s.Brokers)
	}
	if strings.TrimSpace(s.Host) == "" || strings.ContainsAny(s.Host, " /,") {
		bad("host %q is not a host name or address", s.Host)
	}
	if s.BasePort < 1 || s.BasePort+s.listenerPorts()-1 > 65535 {
		bad("base port %d leaves no room for %d brokers", s.BasePort, s.Brokers)
	}
	if s.MetricsBasePort != 0 {
		if s.MetricsBasePort < 1 || s.MetricsBasePort+max(s.Brokers, 1)-1 > 65535 {
			bad("metrics base port %d leaves no room for %d brokers", s.MetricsBasePort, s.Brokers)
		} else if overlap(s.BasePort, s.MetricsBasePort, s.listenerPorts()) || overlap(s.MetricsBasePort, s.BasePort, s.Brokers) {
			bad("metrics ports %d-%d overlap the broker ports %d-%d", s.MetricsBasePort, s.MetricsBasePort+s.Brokers-1, s.BasePort, s.BasePort+s.Brokers-1)
		}
	}
	switch s.ZooKeeper {
	case ZKAuto, ZKLocal:
		if n := s.ZooKeeperNodes; n != 0 && n != 1 && n != 3 && n != 5 {
			bad("ZooKeeper nodes %d: want 1, 3 or 5", n)
		}
		last := s.ZooKeeperPort + s.zkNodes() - 1
		if s.zkNodes() > 1 {
			last = s.ZooKeeperPort + 200 + s.zkNodes() - 1
		}
		if s.ZooKeeperPort < 1 || last > 65535 {
			bad("ZooKeeper port %d leaves no room for %d nodes", s.ZooKeeperPort, s.zkNodes())
		} else {
			for _, port := range s.zkPorts() {
				if overlap(s.BasePort, port, s.listenerPorts()) || s.MetricsBasePort != 0 && overlap(s.MetricsBasePort, port, s.Brokers) {
					bad("ZooKeeper port %d is one of the brokers' ports", port)
					break
				}
			}
		}
	case ZKExternal:
		if err := ValidZooKeeperAddr(s.ZooKeeperAddr); err != nil {
			errs = append(errs, err)
		}
	case ZKEmbedded:
	default:
		bad("zookeeper %q: want %s, %s, %s or %s", s.ZooKeeper, ZKAuto, ZKLocal, ZKExternal, ZKEmbedded)
	}
	if s.Partitions < 1 {
		bad("default partitions must be at least 1, got %d", s.Partitions)
	}
	if s.ReplicationFactor < 1 || s.ReplicationFactor > s.Brokers {
		bad("replication factor must be between 1 and the broker count (%d), got %d", s.Brokers, s.ReplicationFactor)
	}
	if s.MinInsyncReplicas < 1 || s.MinInsyncReplicas > s.ReplicationFactor {
		bad("min.insync.replicas must be between 1 and the replication factor (%d), got %d", s.ReplicationFactor, s.MinInsyncReplicas)
	}
	if !slices.Contains(Assignors(), s.Assignor) {
		bad("assignor %q: want one of %s", s.Assignor, strings.Join(Assignors(), ", "))
	}
	if !slices.Contains(Compressions(), s.Compression) {
		bad("compression %q: want one of %s", s.Compression, strings.Join(Compressions(), ", "))
	}
	if strings.ContainsAny(s.Profile, " \t\n/") {
		bad("profile name %q must not hold spaces or slashes", s.Profile)
	}
	for k, v := range s.Settings {
		if _, ok := config.LookupBroker(k); !ok {
			bad("setting %s: not a broker setting", k)
		} else if err := mustDef(k).Check(v); err != nil {
			bad("setting %s=%s: %v", k, v, err)
		}
	}
	return errors.Join(errs...)
}

func mustDef(name string) config.Def {
	d, _ := config.LookupBroker(name)
	return d
}

func overlap(base, port, n int) bool { return port >= base && port < base+n }

// ValidZooKeeperAddr checks a zookeeper.connect string: host:port[,host:port][/chroot].
func ValidZooKeeperAddr(addr string) error {
	hosts, chroot, _ := strings.Cut(addr, "/")
	if strings.TrimSpace(hosts) == "" {
		return fmt.Errorf("ZooKeeper address %q: want host:port[,host:port][/chroot]", addr)
	}
	for _, h := range strings.Split(hosts, ",") {
		_, p, err := net.SplitHostPort(strings.TrimSpace(h))
		if err != nil {
			return fmt.Errorf("ZooKeeper address %q: %v", addr, err)
		}
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("ZooKeeper address %q: bad port %q", addr, p)
		}
	}
	if strings.Contains(addr, "/") && (chroot == "" || strings.HasSuffix(chroot, "/")) {
		return fmt.Errorf("ZooKeeper address %q: bad chroot", addr)
	}
	return nil
}

// Ports lists every port the cluster listens on, ZooKeeper's included when
// it is started locally.
func (s Spec) Ports() []int {
	var ports []int
	for i := range s.listenerPorts() {
		ports = append(ports, s.BasePort+i)
	}
	for i := range s.Brokers {
		if s.MetricsBasePort != 0 {
			ports = append(ports, s.MetricsBasePort+i)
		}
	}
	if s.ZooKeeper == ZKLocal {
		ports = append(ports, s.zkPorts()...)
	}
	return ports
}

// zkNodes is how many ZooKeeper servers run locally.
func (s Spec) zkNodes() int { return max(1, s.ZooKeeperNodes) }

// zkPorts are the ports of the local ZooKeeper servers: the client ports,
// and for an ensemble the quorum and election ports.
func (s Spec) zkPorts() []int {
	var ports []int
	for _, p := range s.ZooKeeperPeers() {
		ports = append(ports, p.QuorumPort, p.ElectionPort)
	}
	for i := range s.zkNodes() {
		ports = append(ports, s.ZooKeeperPort+i)
	}
	return ports
}

// ZooKeeperPeers are the nodes of the local ensemble (ids 1..n on
// 127.0.0.1), nil for a single server.
func (s Spec) ZooKeeperPeers() []zkinstall.Peer {
	if s.zkNodes() == 1 {
		return nil
	}
	peers := make([]zkinstall.Peer, s.zkNodes())
	for i := range peers {
		peers[i] = zkinstall.Peer{ID: i + 1, Host: "127.0.0.1", QuorumPort: s.ZooKeeperPort + 100 + i, ElectionPort: s.ZooKeeperPort + 200 + i}
	}
	return peers
}

// CheckPortsFree reports the ports that something already listens on.
func (s Spec) CheckPortsFree() error {
	var busy []string
	for _, p := range s.Ports() {
		ln, err := net.Listen("tcp", net.JoinHostPort(s.Host, strconv.Itoa(p)))
		if err != nil {
			busy = append(busy, strconv.Itoa(p))
			continue
		}
		ln.Close()
	}
	if len(busy) > 0 {
		return fmt.Errorf("ports in use on %s: %s", s.Host, strings.Join(busy, ", "))
	}
	return nil
}

// listenerPorts is how many consecutive ports from BasePort the brokers use:
// one each, two each when secure (client, then inter-broker).
func (s Spec) listenerPorts() int {
	n := max(s.Brokers, 1)
	if s.Secure {
		return 2 * n
	}
	return n
}

// BrokerAddr is broker id's host:port.
func (s Spec) BrokerAddr(id int) string {
	return net.JoinHostPort(s.Host, strconv.Itoa(s.BasePort+id))
}

// MetricsAddr is broker id's metrics host:port, or "" without metrics.
func (s Spec) MetricsAddr(id int) string {
	if s.MetricsBasePort == 0 {
		return ""
	}
	return net.JoinHostPort(s.Host, strconv.Itoa(s.MetricsBasePort+id))
}

// BrokerAddrs lists every broker's host:port.
func (s Spec) BrokerAddrs() []string {
	out := make([]string, s.Brokers)
	for i := range out {
		out[i] = s.BrokerAddr(i)
	}
	return out
}

// ZooKeeperConnect is the brokers' zookeeper.connect ("" on the embedded store).
func (s Spec) ZooKeeperConnect() string {
	switch s.ZooKeeper {
	case ZKLocal:
		addrs := make([]string, s.zkNodes())
		for i := range addrs {
			addrs[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.ZooKeeperPort+i))
		}
		return strings.Join(addrs, ",")
	case ZKExternal:
		return s.ZooKeeperAddr
	}
	return ""
}

// BrokerDir is where broker id keeps its server.properties, log and data.
func BrokerDir(dir string, id int) string { return filepath.Join(dir, fmt.Sprintf("broker-%d", id)) }

// BrokerProps are broker id's settings.
func (s Spec) BrokerProps(dir string, id int) map[string]string {
	p := map[string]string{
		"broker.id":                        strconv.Itoa(id),
		"listeners":                        "PLAINTEXT://" + s.BrokerAddr(id),
		"log.dirs":                         filepath.Join(BrokerDir(dir, id), "data"),
		"num.partitions":                   strconv.Itoa(s.Partitions),
		"default.replication.factor":       strconv.Itoa(s.ReplicationFactor),
		"min.insync.replicas":              strconv.Itoa(s.MinInsyncReplicas),
		"unclean.leader.election.enable":   strconv.FormatBool(s.UncleanElection),
		"auto.leader.rebalance.enable":     strconv.FormatBool(s.AutoLeaderRebalance),
		"compression.type":                 s.Compression,
		"offsets.topic.replication.factor": strconv.Itoa(min(3, s.Brokers)),
		// A local cluster is for watching failures: a dead broker's session
		// ends after 6 s instead of Kafka's 18 s, and groups start at once.
		"zookeeper.session.timeout.ms":     "6000",
		"group.initial.rebalance.delay.ms": "0",
	}
	if zk := s.ZooKeeperConnect(); zk != "" {
		p["zookeeper.connect"] = zk
	}
	if m := s.MetricsAddr(id); m != "" {
		p["metrics.listener"] = m
	}
	for k, v := range s.Settings {
		p[k] = v
	}
	return p
}

// brokerFileProps are BrokerProps with, for a secure cluster, the listener
// and security settings (which need the generated passwords).
func (s Spec) brokerFileProps(dir string, id int, sec secrets) map[string]string {
	p := s.BrokerProps(dir, id)
	if s.Secure {
		for k, v := range s.secureBrokerProps(dir, id, sec) {
			if _, set := s.Settings[k]; !set {
				p[k] = v
			}
		}
	}
	return p
}

// ConfigPath is broker id's server.properties.
func ConfigPath(dir string, id int) string {
	return filepath.Join(BrokerDir(dir, id), "server.properties")
}

// ReadSpec reads DIR/cluster.yaml; ok is false when there is none.
func ReadSpec(dir string) (spec Spec, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, SpecFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Spec{}, false, nil
	}
	if err != nil {
		return Spec{}, false, err
	}
	spec = DefaultSpec()
	if err := yaml.Unmarshal(b, &spec); err != nil {
		return Spec{}, false, fmt.Errorf("%s: %w", filepath.Join(dir, SpecFile), err)
	}
	if err := spec.Validate(); err != nil {
		return Spec{}, false, fmt.Errorf("%s: %w", filepath.Join(dir, SpecFile), err)
	}
	return spec, true, nil
}

// WriteFiles writes the cluster into dir: cluster.yaml, one
// server.properties per broker and a client.properties with the clients'
// defaults. It returns the paths written.
func (s Spec) WriteFiles(dir string) ([]string, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var sec secrets
	if s.Secure {
		var err error
		if sec, err = s.ensurePKI(dir); err != nil {
			return nil, fmt.Errorf("making the secure cluster's certificates: %w", err)
		}
	}
	b, err := yaml.Marshal(s)
	if err != nil {
		return nil, err
	}
	header := "# Local ktool cluster: `ktool cluster up --dir " + dir + "` starts it.\n"
	files := []struct {
		path string
		body []byte
	}{{filepath.Join(dir, SpecFile), append([]byte(header), b...)}}
	for id := range s.Brokers {
		files = append(files, struct {
			path string
			body []byte
		}{ConfigPath(dir, id), properties(fmt.Sprintf("broker %d of the local cluster in %s", id, dir), s.brokerFileProps(dir, id, sec))})
	}
	files = append(files, struct {
		path string
		body []byte
	}{filepath.Join(dir, "client.properties"), properties("client defaults for the local cluster in "+dir, s.clientFileProps(dir, sec))})
	if s.Secure {
		files = append(files, struct {
			path string
			body []byte
		}{KcatConfig(dir), properties("librdkafka (kcat -F) settings for the local cluster in "+dir, kcatProps(s, dir, sec))})
		for _, u := range SampleUsers {
			p := s.ClientProps()
			for k, v := range userClientProps(dir, u, sec.users[u]) {
				p[k] = v
			}
			files = append(files, struct {
				path string
				body []byte
			}{UserClientConfig(dir, u), properties(fmt.Sprintf("client settings of the sample user %s of the local cluster in %s", u, dir), p)})
		}
	}
	var written []string
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			return written, err
		}
		mode := os.FileMode(0o644)
		if s.Secure {
			mode = 0o600 // they hold passwords
		}
		if err := writeAtomic(f.path, f.body, mode); err != nil {
			return written, err
		}
		written = append(written, f.path)
	}
	return written, nil
}

// javaAssignor is the Java client's class name of an assignor, so that
// client.properties works with Kafka's own tools too.
func javaAssignor(name string) string {
	switch name {
	case "roundrobin":
		return "org.apache.kafka.clients.consumer.RoundRobinAssignor"
	case "sticky":
		return "org.apache.kafka.clients.consumer.StickyAssignor"
	case "cooperative-sticky":
		return "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
	}
	return "org.apache.kafka.clients.consumer.RangeAssignor"
}

// ClientProps are the clients' settings (Kafka's client config names).
func (s Spec) ClientProps() map[string]string {
	p := map[string]string{
		"bootstrap.servers":             strings.Join(s.BrokerAddrs(), ","),
		"partition.assignment.strategy": javaAssignor(s.Assignor),
	}
	switch s.Compression {
	case "producer", "uncompressed":
		p["compression.type"] = "none"
	default:
		p["compression.type"] = s.Compression
	}
	return p
}

// clientFileProps are ClientProps with a secure cluster's security lines.
func (s Spec) clientFileProps(dir string, sec secrets) map[string]string {
	p := s.ClientProps()
	if s.Secure {
		for k, v := range secureClientProps(dir, sec) {
			p[k] = v
		}
	}
	return p
}

func properties(title string, p map[string]string) []byte {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", title)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, escapeValue(p[k]))
	}
	return []byte(b.String())
}

// escapeValue escapes what java.util.Properties would otherwise read
// differently: backslashes, line breaks and leading spaces.
func escapeValue(v string) string {
	r := strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\r", `\r`)
	v = r.Replace(v)
	if strings.HasPrefix(v, " ") {
		v = `\` + v
	}
	return v
}

func writeAtomic(path string, body []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, body, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
