package setup

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ktoolhq/ktool/broker/config"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Spec)
		want string
	}{
		{"defaults", func(*Spec) {}, ""},
		{"no brokers", func(s *Spec) { s.Brokers = 0 }, "brokers must be between 1 and 100"},
		{"rf above brokers", func(s *Spec) { s.ReplicationFactor = 4 }, "replication factor must be between 1 and the broker count (3)"},
		{"min isr above rf", func(s *Spec) { s.ReplicationFactor = 2; s.MinInsyncReplicas = 3 }, "min.insync.replicas must be between 1 and the replication factor (2)"},
		{"ports past 65535", func(s *Spec) { s.BasePort = 65534 }, "leaves no room"},
		{"metrics overlap", func(s *Spec) { s.MetricsBasePort = 9093 }, "overlap the broker ports"},
		{"zookeeper port on a broker", func(s *Spec) { s.ZooKeeper = ZKLocal; s.ZooKeeperPort = 9094 }, "one of the brokers' ports"},
		{"ensemble of 2", func(s *Spec) { s.ZooKeeper = ZKLocal; s.ZooKeeperNodes = 2 }, "want 1, 3 or 5"},
		{"ensemble", func(s *Spec) { s.ZooKeeper = ZKLocal; s.ZooKeeperNodes = 3 }, ""},
		{"ensemble quorum port on a broker", func(s *Spec) { s.ZooKeeper = ZKLocal; s.ZooKeeperNodes = 3; s.ZooKeeperPort = 8892 }, "one of the brokers' ports"},
		{"ensemble past 65535", func(s *Spec) { s.ZooKeeper = ZKLocal; s.ZooKeeperNodes = 3; s.ZooKeeperPort = 65400 }, "leaves no room for 3 nodes"},
		{"external without address", func(s *Spec) { s.ZooKeeper = ZKExternal }, "ZooKeeper address"},
		{"external bad port", func(s *Spec) { s.ZooKeeper = ZKExternal; s.ZooKeeperAddr = "zk:http" }, "bad port"},
		{"external chroot", func(s *Spec) { s.ZooKeeper = ZKExternal; s.ZooKeeperAddr = "a:1,b:2/kafka" }, ""},
		{"unknown mode", func(s *Spec) { s.ZooKeeper = "kraft" }, "zookeeper \"kraft\""},
		{"assignor", func(s *Spec) { s.Assignor = "fair" }, "assignor \"fair\""},
		{"compression", func(s *Spec) { s.Compression = "brotli" }, "compression \"brotli\""},
		{"host", func(s *Spec) { s.Host = "" }, "host"},
		{"unknown setting", func(s *Spec) { s.Settings = map[string]string{"no.such": "1"} }, "not a broker setting"},
		{"bad setting", func(s *Spec) { s.Settings = map[string]string{"num.partitions": "0"} }, "num.partitions=0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := DefaultSpec()
			tt.edit(&s)
			err := s.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestFitReplication(t *testing.T) {
	for _, tt := range []struct{ brokers, rf, isr int }{{1, 1, 1}, {2, 2, 1}, {3, 3, 2}, {5, 3, 2}} {
		s := DefaultSpec()
		s.Brokers = tt.brokers
		s.FitReplication()
		if s.ReplicationFactor != tt.rf || s.MinInsyncReplicas != tt.isr {
			t.Errorf("%d brokers: rf %d isr %d, want %d %d", tt.brokers, s.ReplicationFactor, s.MinInsyncReplicas, tt.rf, tt.isr)
		}
		if err := s.Validate(); err != nil {
			t.Error(err)
		}
	}
}

func TestWriteFilesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s := DefaultSpec()
	s.ZooKeeper, s.ZooKeeperAddr = ZKExternal, "127.0.0.1:2181/kc"
	s.MetricsBasePort = 19000
	s.Compression, s.Assignor = "zstd", "cooperative-sticky"
	s.Settings = map[string]string{"log.segment.bytes": "1048576"}
	written, err := s.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 5 {
		t.Fatalf("wrote %v", written)
	}
	got, ok, err := ReadSpec(dir)
	if err != nil || !ok {
		t.Fatalf("ReadSpec: %v %v", ok, err)
	}
	if got.ZooKeeperAddr != s.ZooKeeperAddr || got.Settings["log.segment.bytes"] != "1048576" || got.Compression != "zstd" {
		t.Fatalf("read back %+v", got)
	}
	props, err := config.ReadPropertiesFile(ConfigPath(dir, 2))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.NewBroker(props)
	if err != nil {
		t.Fatalf("server.properties is not a valid broker config: %v", err)
	}
	for k, want := range map[string]string{
		"broker.id": "2", "listeners": "PLAINTEXT://127.0.0.1:9094", "zookeeper.connect": "127.0.0.1:2181/kc",
		"metrics.listener": "127.0.0.1:19002", "min.insync.replicas": "2", "default.replication.factor": "3",
		"compression.type": "zstd", "log.segment.bytes": "1048576", "log.dirs": filepath.Join(dir, "broker-2", "data"),
	} {
		if got := cfg.Get(k).Value; got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	client, err := config.ReadPropertiesFile(filepath.Join(dir, "client.properties"))
	if err != nil {
		t.Fatal(err)
	}
	if client["partition.assignment.strategy"] != "org.apache.kafka.clients.consumer.CooperativeStickyAssignor" || client["compression.type"] != "zstd" ||
		client["bootstrap.servers"] != "127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094" {
		t.Fatalf("client.properties %v", client)
	}
}

func TestReadSpecRejectsBadFile(t *testing.T) {
	dir := t.TempDir()
	if _, ok, err := ReadSpec(dir); ok || err != nil {
		t.Fatalf("empty dir: %v %v", ok, err)
	}
	if err := os.WriteFile(filepath.Join(dir, SpecFile), []byte("brokers: 2\ndefault_replication_factor: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadSpec(dir); err == nil || !strings.Contains(err.Error(), "replication factor") {
		t.Fatalf("error %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, SpecFile), []byte("brokers: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadSpec(dir); err == nil {
		t.Fatal("bad YAML accepted")
	}
}

func TestCheckPortsFree(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	s := DefaultSpec()
	s.BasePort, s.Brokers = port-1, 2
	s.FitReplication()
	if err := s.CheckPortsFree(); err == nil || !strings.Contains(err.Error(), "ports in use") {
		t.Fatalf("error %v", err)
	}
}

func TestEnsembleSpec(t *testing.T) {
	s := DefaultSpec()
	s.ZooKeeper, s.ZooKeeperNodes = ZKLocal, 3
	if got, want := s.ZooKeeperConnect(), "127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183"; got != want {
		t.Fatalf("connect %q, want %q", got, want)
	}
	peers := s.ZooKeeperPeers()
	if len(peers) != 3 || peers[2].ID != 3 || peers[2].QuorumPort != 2283 || peers[2].ElectionPort != 2383 {
		t.Fatalf("peers %+v", peers)
	}
	ports := s.Ports()
	for _, p := range []int{2181, 2183, 2281, 2383} {
		if !slices.Contains(ports, p) {
			t.Errorf("ports %v lack %d", ports, p)
		}
	}
	s.ZooKeeperNodes = 1
	if s.ZooKeeperPeers() != nil || s.ZooKeeperConnect() != "127.0.0.1:2181" {
		t.Fatalf("single node: peers %v, connect %s", s.ZooKeeperPeers(), s.ZooKeeperConnect())
	}
}
