package setup

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

func writeHosts(t *testing.T, racks ...string) string {
	t.Helper()
	ios, _, _, _ := cmdutil.Test()
	dir := t.TempDir()
	o := &InitOptions{Factory: cmdutil.NewFactory(ios, cmdutil.BuildInfo{}), Spec: DefaultSpec(), Dir: dir, Hosts: DefaultHostsSpec(),
		Changed: func(string) bool { return false }}
	o.Hosts.Hosts = []string{"k1", "k2", "k3", "k4"}
	o.Hosts.Racks = racks
	if err := RunInitHosts(o); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestInitHostsWritesAConsistentSet(t *testing.T) {
	dir := writeHosts(t, "a", "b", "c", "a")
	problems, err := CheckDir(dir)
	if err != nil || len(problems) != 0 {
		t.Fatalf("a fresh set has problems: %v %v", problems, err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, want := range []string{"broker.id=4\n", "advertised.listeners=PLAINTEXT://k4:9092\n", "broker.rack=a\n", "zookeeper.connect=k1:2181,k2:2181,k3:2181\n", "min.insync.replicas=2\n"} {
		if !strings.Contains(read("k4/server.properties"), want) {
			t.Errorf("k4/server.properties lacks %q", want)
		}
	}
	if z := read("k2/zoo.cfg"); !strings.Contains(z, "server.1=k1:2888:3888\nserver.2=k2:2888:3888\nserver.3=k3:2888:3888\n") {
		t.Errorf("zoo.cfg:\n%s", z)
	}
	if read("k3/myid") != "3\n" {
		t.Errorf("k3/myid = %q", read("k3/myid"))
	}
	if _, err := os.Stat(filepath.Join(dir, "k4", "zoo.cfg")); err == nil {
		t.Error("k4 is not in the ensemble but got a zoo.cfg")
	}
	if u := read("k1/ktool-broker.service"); !strings.Contains(u, "ExecStart=/usr/bin/ktool broker start --config /etc/ktool/server.properties") || !strings.Contains(u, "After=network-online.target zookeeper.service") {
		t.Errorf("broker unit:\n%s", u)
	}
	if r := read("README.md"); !strings.Contains(r, "ktool cluster check .") || !strings.Contains(r, "systemctl enable --now zookeeper") {
		t.Errorf("README:\n%s", r)
	}
}

func TestCheckFindsProblems(t *testing.T) {
	dir := writeHosts(t)
	edit := func(name, old, new string) {
		t.Helper()
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), old) {
			t.Fatalf("%s lacks %q", name, old)
		}
		if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit("k2/server.properties", "broker.id=2", "broker.id=1")
	edit("k3/server.properties", "zookeeper.connect=k1:2181,k2:2181,k3:2181", "zookeeper.connect=k1:2181,k9:2181")
	edit("k4/server.properties", "min.insync.replicas=2", "min.insync.replicas=3")
	edit("k1/server.properties", "default.replication.factor=3", "default.replication.factor=5")
	edit("k4/server.properties", "advertised.listeners=PLAINTEXT://k4:9092", "advertised.listeners=PLAINTEXT://k4:9093")
	edit("k2/myid", "2", "7")
	problems, err := CheckDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(problems, "\n")
	for _, want := range []string{
		"k1 and k2 both have broker.id 1",
		"the brokers do not share one zookeeper.connect",
		"k4: min.insync.replicas 3 is not below default.replication.factor 3",
		"k1: default.replication.factor 5 is more than the 4 brokers",
		"k4: advertised port 9093 is not the port of any of its listeners",
		`k2: myid is "7" but zoo.cfg names it server.2`,
		"zookeeper.connect names k9:2181, which is not a member of the ensemble",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("check did not report %q:\n%s", want, all)
		}
	}
	ios, _, out, _ := cmdutil.Test()
	cmd := NewCheckCommand(cmdutil.NewFactory(ios, cmdutil.BuildInfo{}))
	cmd.SetArgs([]string{dir})
	var ee *cmdutil.ExitErr
	if err := cmd.Execute(); !errors.As(err, &ee) || ee.Code != cmdutil.ExitProblems || !strings.Contains(out.String(), "problems:") {
		t.Errorf("cluster check: %v, output %q", err, out)
	}
}

func TestInitHostsRefuses(t *testing.T) {
	for _, tc := range []struct {
		hosts, racks, zk []string
		want             string
	}{
		{[]string{"a", "a"}, nil, nil, "listed twice"},
		{[]string{"a", "b"}, []string{"r1"}, nil, "1 racks for 2 hosts"},
		{[]string{"a", "b", "c"}, nil, []string{"a", "b"}, "use an odd number"},
		{[]string{"a", "b"}, nil, []string{"z"}, "not one of --hosts"},
	} {
		h := DefaultHostsSpec()
		h.Hosts, h.Racks, h.ZooKeeperHosts = tc.hosts, tc.racks, tc.zk
		h.ReplicationFactor, h.MinInsyncReplicas = 1, 1
		h.Resolve()
		if err := h.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc, err, tc.want)
		}
	}
}
