package setup

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/internal/brokerproc"
	"github.com/ktoolhq/ktool/internal/zkinstall"
)

// TestGeneratedClusterForms brings up the cluster `ktool cluster init --hosts`
// writes, on three loopback addresses of this machine standing for three
// hosts (127.0.0.2-4): a ZooKeeper ensemble of 3 from the generated zoo.cfg
// and myid files and three `ktool broker start --config` processes from the
// generated server.properties. Only what cannot stay as written on one
// machine is rewritten: ports (chosen free), each node's bind address, and
// the data directories. The cluster must form: 3 brokers registered, and a
// topic with replication factor 3 fully in sync.
func TestGeneratedClusterForms(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	zk, err := zkinstall.Find()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no ZooKeeper installation: %v", err)
		}
		t.Skipf("SKIPPED: no ZooKeeper installation (%v); the generated-cluster test did not run", err)
	}
	hosts := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}
	gen := filepath.Join(t.TempDir(), "prod")
	if out, err := exec.Command(ktoolBin, "cluster", "init", "--hosts", strings.Join(hosts, ","), "--racks", "r1,r2,r3", "--dir", gen).CombinedOutput(); err != nil {
		t.Fatalf("cluster init --hosts: %v\n%s", err, out)
	}
	run := t.TempDir()

	// Ports: the client port of each ZooKeeper node and its two quorum
	// ports, and each broker's port, free on that node's address.
	type node struct {
		host                   string
		zkClient, quorum, elec int
		broker                 int
	}
	nodes := make([]node, len(hosts))
	for i, h := range hosts {
		nodes[i] = node{host: h, zkClient: freePortOn(t, h), quorum: freePortOn(t, h), elec: freePortOn(t, h), broker: freePortOn(t, h)}
	}
	var connect []string
	for _, n := range nodes {
		connect = append(connect, net.JoinHostPort(n.host, strconv.Itoa(n.zkClient)))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i, n := range nodes {
		dataDir := filepath.Join(run, "zk-"+n.host)
		if err := os.MkdirAll(dataDir, 0o755); err != nil {
			t.Fatal(err)
		}
		myid := readFile(t, filepath.Join(gen, n.host, "myid"))
		if err := os.WriteFile(filepath.Join(dataDir, "myid"), myid, 0o644); err != nil {
			t.Fatal(err)
		}
		cfg := rewriteProps(t, readFile(t, filepath.Join(gen, n.host, "zoo.cfg")), func(k, v string) (string, bool) {
			switch {
			case k == "dataDir":
				return dataDir, true
			case k == "clientPort":
				return strconv.Itoa(n.zkClient), true
			case strings.HasPrefix(k, "server."):
				id, err := strconv.Atoi(strings.TrimPrefix(k, "server."))
				if err != nil || id < 1 || id > len(nodes) || !strings.HasPrefix(v, nodes[id-1].host+":2888:3888") {
					t.Fatalf("zoo.cfg line %s=%s: want server.N=<host N>:2888:3888", k, v)
				}
				p := nodes[id-1]
				return fmt.Sprintf("%s:%d:%d", p.host, p.quorum, p.elec), true
			}
			return v, false
		}, "clientPortAddress="+n.host, "admin.enableServer=false")
		cfgPath := filepath.Join(run, "zoo-"+n.host+".cfg")
		if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
			t.Fatal(err)
		}
		// Not tied to ctx: the brokers stop (cleanups, after ctx ends) while
		// the ensemble still runs.
		cmd := exec.Command(zk.Java, "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
			"-Dzookeeper.admin.enableServer=false", "-cp", strings.Join(zk.Classpath, string(os.PathListSeparator)), zkinstall.MainClass, cfgPath)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("ZooKeeper %d output:\n%s", i+1, tailLines(out.String(), 30))
			}
		})
	}

	var brokers []*brokerproc.Broker
	// The brokers stop together (SIGTERM to all, as when a cluster is shut
	// down), before the ensemble does.
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, b := range brokers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := b.Stop(30 * time.Second); err != nil {
					t.Logf("broker %d: %v", b.ID(), err)
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			for _, b := range brokers {
				t.Logf("broker %d output:\n%s", b.ID(), b.Tail(40))
			}
		}
	})
	for i, n := range nodes {
		id := int32(i + 1)
		logDir := filepath.Join(run, "kafka-"+n.host)
		props := rewriteProps(t, readFile(t, filepath.Join(gen, n.host, "server.properties")), func(k, v string) (string, bool) {
			switch k {
			case "listeners", "advertised.listeners":
				return "PLAINTEXT://" + net.JoinHostPort(n.host, strconv.Itoa(n.broker)), true
			case "log.dirs":
				return logDir, true
			case "zookeeper.connect":
				return strings.Join(connect, ","), true
			case "broker.id":
				if v != strconv.Itoa(int(id)) {
					t.Fatalf("%s/server.properties: broker.id=%s, want %d", n.host, v, id)
				}
			}
			return v, false
		})
		propsPath := filepath.Join(run, "server-"+n.host+".properties")
		if err := os.WriteFile(propsPath, props, 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := brokerproc.New(brokerproc.Spec{Bin: ktoolBin, ID: id, Host: n.host, Port: n.broker, Dir: logDir,
			ReadyTimeout: time.Minute, Args: []string{"--config", propsPath}})
		if err != nil {
			t.Fatal(err)
		}
		brokers = append(brokers, b)
		if err := b.Launch(); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range brokers {
		if err := b.WaitReady(); err != nil {
			t.Fatalf("broker %d: %v", b.ID(), err)
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(net.JoinHostPort(nodes[0].host, strconv.Itoa(nodes[0].broker))))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	waitUntil(t, ctx, "3 brokers registered with their racks", func() bool {
		md, err := adm.BrokerMetadata(ctx)
		if err != nil || len(md.Brokers) != 3 {
			return false
		}
		for _, b := range md.Brokers {
			if b.Rack == nil || *b.Rack != fmt.Sprintf("r%d", b.NodeID) || b.Host != hosts[b.NodeID-1] {
				return false
			}
		}
		return true
	})
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "formed"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ctx, "every partition of an RF=3 topic with 3 in-sync replicas", func() bool {
		md, err := adm.Metadata(ctx, "formed")
		if err != nil || len(md.Topics["formed"].Partitions) != 3 {
			return false
		}
		for _, p := range md.Topics["formed"].Partitions {
			if p.Err != nil || len(p.ISR) != 3 || p.Leader < 1 {
				return false
			}
		}
		return true
	})
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "formed", Value: []byte("the cluster formed")}).FirstErr(); err != nil {
		t.Fatalf("acks=all produce: %v", err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rewriteProps rewrites key=value lines with f (true: replaced) and appends
// extra lines; comments and other lines stay.
func rewriteProps(t *testing.T, data []byte, f func(k, v string) (string, bool), extra ...string) []byte {
	t.Helper()
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		k, v, ok := strings.Cut(line, "=")
		if ok && !strings.HasPrefix(strings.TrimSpace(line), "#") {
			if nv, changed := f(strings.TrimSpace(k), strings.TrimSpace(v)); changed {
				line = strings.TrimSpace(k) + "=" + nv
			}
		}
		out.WriteString(line + "\n")
	}
	for _, e := range extra {
		out.WriteString(e + "\n")
	}
	return out.Bytes()
}

// freePortOn is a port nothing listens on at host, below the ephemeral range.
func freePortOn(t *testing.T, host string) int {
	t.Helper()
	for range 100 {
		port := 20000 + rand.IntN(12768)
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err == nil {
			l.Close()
			return port
		}
	}
	t.Fatalf("no free port on %s", host)
	return 0
}

func waitUntil(t *testing.T, ctx context.Context, what string, f func() bool) {
	t.Helper()
	for !f() {
		if ctx.Err() != nil {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
