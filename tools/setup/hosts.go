package setup

import (
	"bytes"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
)

// HostsSpec describes a cluster on real machines: one broker per host, a
// ZooKeeper ensemble on some of them.
type HostsSpec struct {
	Hosts []string
	// Racks are the hosts' broker.rack values, in host order (none: no racks).
	Racks []string
	Port  int
	// ZooKeeperHosts run the ensemble (default: the first 1, 3 or 5 hosts).
	ZooKeeperHosts    []string
	ZooKeeperPort     int
	DataDir           string
	ZooKeeperDataDir  string
	Binary            string
	ZooKeeperCommand  string
	Partitions        int
	ReplicationFactor int
	MinInsyncReplicas int
}

// DefaultHostsSpec is the defaults of `cluster init --hosts`.
func DefaultHostsSpec() HostsSpec {
	return HostsSpec{
		Port: 9092, ZooKeeperPort: 2181,
		DataDir: "/var/lib/ktool/data", ZooKeeperDataDir: "/var/lib/zookeeper",
		Binary:           "/usr/bin/ktool",
		ZooKeeperCommand: "/usr/share/zookeeper/bin/zkServer.sh start-foreground /etc/zookeeper/zoo.cfg",
		Partitions:       3, ReplicationFactor: 3, MinInsyncReplicas: 2,
	}
}

// ensembleSize is the largest odd ensemble up to 5 the hosts allow.
func ensembleSize(n int) int {
	switch {
	case n >= 5:
		return 5
	case n >= 3:
		return 3
	}
	return 1
}

// Resolve fills the ZooKeeper hosts and fits the replication to the host count.
func (h *HostsSpec) Resolve() {
	if len(h.ZooKeeperHosts) == 0 {
		h.ZooKeeperHosts = append([]string(nil), h.Hosts[:ensembleSize(len(h.Hosts))]...)
	}
}

// checkHostNames refuses an empty list, a name that is not a host name or
// address, and a host listed twice.
func checkHostNames(hosts []string) error {
	if len(hosts) == 0 {
		return fmt.Errorf("--hosts names no hosts")
	}
	seen := map[string]bool{}
	for _, host := range hosts {
		if host == "" || strings.ContainsAny(host, " /:,") {
			return fmt.Errorf("host %q is not a host name or address", host)
		}
		if seen[host] {
			return fmt.Errorf("host %s is listed twice", host)
		}
		seen[host] = true
	}
	return nil
}

// Validate refuses what check would report.
func (h HostsSpec) Validate() error {
	if err := checkHostNames(h.Hosts); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, host := range h.Hosts {
		seen[host] = true
	}
	if len(h.Racks) > 0 && len(h.Racks) != len(h.Hosts) {
		return fmt.Errorf("%d racks for %d hosts: give one rack per host, in host order", len(h.Racks), len(h.Hosts))
	}
	for _, z := range h.ZooKeeperHosts {
		if !seen[z] {
			return fmt.Errorf("ZooKeeper host %s is not one of --hosts", z)
		}
	}
	if len(h.ZooKeeperHosts)%2 == 0 {
		return fmt.Errorf("a ZooKeeper ensemble of %d loses its quorum as easily as one of %d: use an odd number", len(h.ZooKeeperHosts), len(h.ZooKeeperHosts)-1)
	}
	for _, p := range []int{h.Port, h.ZooKeeperPort} {
		if p <= 0 || p > 65535 {
			return fmt.Errorf("port %d is not a port", p)
		}
	}
	switch {
	case h.Partitions < 1:
		return fmt.Errorf("partitions must be at least 1")
	case h.ReplicationFactor < 1 || h.ReplicationFactor > len(h.Hosts):
		return fmt.Errorf("replication factor %d: between 1 and the %d brokers", h.ReplicationFactor, len(h.Hosts))
	case h.MinInsyncReplicas < 1 || (h.ReplicationFactor > 1 && h.MinInsyncReplicas >= h.ReplicationFactor):
		return fmt.Errorf("min.insync.replicas %d must be at least 1 and below the replication factor %d, or one broker down stops acks=all writes", h.MinInsyncReplicas, h.ReplicationFactor)
	}
	return nil
}

func (h HostsSpec) zookeeperConnect() string {
	parts := make([]string, len(h.ZooKeeperHosts))
	for i, z := range h.ZooKeeperHosts {
		parts[i] = net.JoinHostPort(z, strconv.Itoa(h.ZooKeeperPort))
	}
	return strings.Join(parts, ",")
}

// Files renders every file, by path relative to the output directory:
// HOST/server.properties, HOST/ktool-broker.service, and on ZooKeeper hosts
// HOST/zoo.cfg, HOST/myid and HOST/zookeeper.service; README.md says what to
// do with them.
func (h HostsSpec) Files() map[string][]byte {
	out := map[string][]byte{}
	zkID := map[string]int{}
	for i, z := range h.ZooKeeperHosts {
		zkID[z] = i + 1
	}
	var zoo bytes.Buffer
	fmt.Fprintf(&zoo, "# ZooKeeper ensemble of the ktool cluster (written by ktool cluster init --hosts).\n")
	fmt.Fprintf(&zoo, "tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir=%s\nclientPort=%d\n", h.ZooKeeperDataDir, h.ZooKeeperPort)
	fmt.Fprintf(&zoo, "4lw.commands.whitelist=ruok,srvr,mntr\n")
	for i, z := range h.ZooKeeperHosts {
		fmt.Fprintf(&zoo, "server.%d=%s:2888:3888\n", i+1, z)
	}
	for i, host := range h.Hosts {
		id := i + 1
		var p bytes.Buffer
		fmt.Fprintf(&p, "# Broker %d of the ktool cluster on %s (written by ktool cluster init --hosts).\n", id, host)
		fmt.Fprintf(&p, "broker.id=%d\n", id)
		fmt.Fprintf(&p, "listeners=PLAINTEXT://0.0.0.0:%d\n", h.Port)
		fmt.Fprintf(&p, "advertised.listeners=PLAINTEXT://%s\n", net.JoinHostPort(host, strconv.Itoa(h.Port)))
		if len(h.Racks) > 0 {
			fmt.Fprintf(&p, "broker.rack=%s\n", h.Racks[i])
		}
		fmt.Fprintf(&p, "log.dirs=%s\n", h.DataDir)
		fmt.Fprintf(&p, "zookeeper.connect=%s\n", h.zookeeperConnect())
		fmt.Fprintf(&p, "num.partitions=%d\n", h.Partitions)
		fmt.Fprintf(&p, "default.replication.factor=%d\n", h.ReplicationFactor)
		fmt.Fprintf(&p, "min.insync.replicas=%d\n", h.MinInsyncReplicas)
		fmt.Fprintf(&p, "offsets.topic.replication.factor=%d\n", min(3, len(h.Hosts)))
		fmt.Fprintf(&p, "unclean.leader.election.enable=false\nauto.leader.rebalance.enable=true\n")
		out[host+"/server.properties"] = p.Bytes()
		after := "network-online.target"
		if _, ok := zkID[host]; ok {
			after += " zookeeper.service"
		}
		out[host+"/ktool-broker.service"] = []byte(fmt.Sprintf(`[Unit]
Description=ktool broker %d (Kafka-compatible)
Wants=network-online.target
After=%s

[Service]
User=ktool
ExecStart=%s broker start --config /etc/ktool/server.properties
Restart=on-failure
RestartSec=5
LimitNOFILE=100000
TimeoutStopSec=120

[Install]
WantedBy=multi-user.target
`, id, after, h.Binary))
		if n, ok := zkID[host]; ok {
			out[host+"/zoo.cfg"] = zoo.Bytes()
			out[host+"/myid"] = []byte(strconv.Itoa(n) + "\n")
			out[host+"/zookeeper.service"] = []byte(fmt.Sprintf(`[Unit]
Description=ZooKeeper %d of the ktool cluster
Wants=network-online.target
After=network-online.target

[Service]
User=zookeeper
ExecStart=%s
Restart=on-failure
RestartSec=5

[Install]
WantedBy=multi-user.target
`, n, h.ZooKeeperCommand))
		}
	}
	out["README.md"] = []byte(h.readme())
	return out
}

func (h HostsSpec) readme() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# A ktool cluster on %d hosts\n\n", len(h.Hosts))
	fmt.Fprintf(&b, "Brokers: %s (port %d). ZooKeeper ensemble: %s (client port %d).\n\n", strings.Join(h.Hosts, ", "), h.Port, strings.Join(h.ZooKeeperHosts, ", "), h.ZooKeeperPort)
	b.WriteString("Check the set first: `ktool cluster check .`\n\n")
	b.WriteString("## On each ZooKeeper host (")
	b.WriteString(strings.Join(h.ZooKeeperHosts, ", "))
	b.WriteString(")\n\n```sh\n")
	fmt.Fprintf(&b, "sudo apt-get install zookeeper              # or your distribution's package\n")
	fmt.Fprintf(&b, "sudo install -d -o zookeeper %s\n", h.ZooKeeperDataDir)
	fmt.Fprintf(&b, "sudo install -m 644 HOST/zoo.cfg /etc/zookeeper/zoo.cfg\n")
	fmt.Fprintf(&b, "sudo install -o zookeeper -m 644 HOST/myid %s/myid\n", h.ZooKeeperDataDir)
	fmt.Fprintf(&b, "sudo install -m 644 HOST/zookeeper.service /etc/systemd/system/\n")
	b.WriteString("sudo systemctl daemon-reload && sudo systemctl enable --now zookeeper\n```\n\n")
	b.WriteString("Start every ZooKeeper host before the brokers; the ensemble serves once a majority runs.\n\n")
	b.WriteString("## On each broker host (" + strings.Join(h.Hosts, ", ") + ")\n\n```sh\n")
	fmt.Fprintf(&b, "sudo install -m 755 ktool %s\n", h.Binary)
	fmt.Fprintf(&b, "sudo useradd --system --home %s ktool\n", h.DataDir)
	fmt.Fprintf(&b, "sudo install -d -o ktool %s /etc/ktool\n", h.DataDir)
	b.WriteString("sudo install -m 644 HOST/server.properties /etc/ktool/server.properties\n")
	b.WriteString("sudo install -m 644 HOST/ktool-broker.service /etc/systemd/system/\n")
	b.WriteString("sudo systemctl daemon-reload && sudo systemctl enable --now ktool-broker\n```\n\n")
	fmt.Fprintf(&b, "Open port %d (clients and brokers) and, between ZooKeeper hosts, 2888 and 3888; %d to the brokers.\n\n", h.Port, h.ZooKeeperPort)
	b.WriteString("## Then\n\n```sh\n")
	hosts := make([]string, len(h.Hosts))
	for i, host := range h.Hosts {
		hosts[i] = net.JoinHostPort(host, strconv.Itoa(h.Port))
	}
	sort.Strings(hosts)
	fmt.Fprintf(&b, "ktool profile create prod --brokers %s --zookeeper %s\n", strings.Join(hosts, ","), h.zookeeperConnect())
	b.WriteString("ktool cluster health --profile prod      # every broker up, a controller\nktool broker list --profile prod\n```\n")
	return b.String()
}
