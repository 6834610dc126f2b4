package nethost

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Subnet is the hosts' network; host i (from 0) has address 10.50.0.(10+i).
const Subnet = "10.50.0.0/24"

// maxHosts bounds the hosts of one lab (addresses .10 to .249).
const maxHosts = 240

// prefix starts the name of everything this package creates; the owning
// process id follows it.
const prefix = "ktn"

var labSeq atomic.Int64

// Lab is one private network: a hub namespace with a bridge, and hosts.
type Lab struct {
	t    testing.TB
	name string // ktn<pid>-<n>-
	hub  string

	mu      sync.Mutex
	hosts   []*Host
	queues  map[*Host]*delayQueue
	delayed uint64 // packets held by the delays removed so far
	closed  bool
}

// Host is one network namespace on the lab's bridge.
type Host struct {
	lab  *Lab
	name string
	ns   string
	ip   string
}

// Name is the host's name in the lab.
func (h *Host) Name() string { return h.name }

// NS is the network namespace's name (under /run/netns).
func (h *Host) NS() string { return h.ns }

// IP is the host's address.
func (h *Host) IP() string { return h.ip }

// Exec is the command prefix that runs a program in the host.
func (h *Host) Exec() []string { return []string{"ip", "netns", "exec", h.ns} }

// New creates an empty lab for the test and removes it when the test ends.
// It first removes the namespaces of labs whose process has died.
func New(t testing.TB) *Lab {
	t.Helper()
	if err := Available(); err != nil {
		if os.Geteuid() != 0 || os.Getenv("CI") != "true" {
			t.Skipf("\n\n*** SKIPPING %s: the multi-host network tests did NOT run ***\n*** %v ***\n\n", t.Name(), err)
		}
		t.Fatalf("nethost: CI=true as root, but network namespaces do not work: %v", err)
	}
	if err := SweepStale(); err != nil {
		t.Logf("nethost: removing stale namespaces: %v", err)
	}
	l := &Lab{t: t, name: fmt.Sprintf("%s%d-%d-", prefix, os.Getpid(), labSeq.Add(1)), queues: map[*Host]*delayQueue{}}
	l.hub = l.name + "hub"
	t.Cleanup(l.Close)
	steps := [][]string{
		{"ip", "netns", "add", l.hub},
		{"ip", "-n", l.hub, "link", "set", "lo", "up"},
		{"ip", "-n", l.hub, "link", "add", "br0", "type", "bridge"},
		{"ip", "-n", l.hub, "link", "set", "br0", "up"},
		{"ip", "netns", "exec", l.hub, "nft", "add table bridge ktool"},
		{"ip", "netns", "exec", l.hub, "nft", "add chain bridge ktool faults { type filter hook forward priority 0 ; policy accept ; }"},
	}
	for _, s := range steps {
		if err := run(s...); err != nil {
			t.Fatalf("nethost: building the hub: %v", err)
		}
	}
	return l
}

// Available says why this machine cannot run labs, if it cannot: it needs
// root, ip, nft and iptables, a network namespace it can create, and the
// kernel's nftables and NFQUEUE target in it.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("network namespaces need root (run the test as root)")
	}
	for _, cmd := range []string{"ip", "nft", "iptables"} {
		if _, err := exec.LookPath(cmd); err != nil {
			return fmt.Errorf("%s is not installed (apt-get install iproute2 nftables iptables): %w", cmd, err)
		}
	}
	probe := fmt.Sprintf("%s%d-probe%d", prefix, os.Getpid(), labSeq.Add(1))
	if err := run("ip", "netns", "add", probe); err != nil {
		return fmt.Errorf("cannot create a network namespace: %w", err)
	}
	defer run("ip", "netns", "del", probe)
	if err := run("ip", "netns", "exec", probe, "nft", "add table bridge probe"); err != nil {
		return fmt.Errorf("nftables does not work in a network namespace: %w", err)
	}
	if err := run("ip", "netns", "exec", probe, "iptables", "-w", "-A", "OUTPUT", "-o", "lo", "-j", "NFQUEUE", "--queue-bypass"); err != nil {
		return fmt.Errorf("iptables' NFQUEUE target (CONFIG_NETFILTER_XT_TARGET_NFQUEUE, for delays) does not work in a network namespace: %w", err)
	}
	return nil
}

var staleName = regexp.MustCompile(`^` + prefix + `(\d+)-`)

// SweepStale removes the namespaces this package created in processes that
// no longer run.
func SweepStale() error {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return fmt.Errorf("ip netns list: %w", err)
	}
	var errs []error
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		m := staleName.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		pid, err := strconv.Atoi(m[1])
		if err != nil || pid == os.Getpid() || alive(pid) {
			continue
		}
		if err := run("ip", "netns", "del", name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// alive reports whether process pid runs: it exists and is not a zombie
// (a killed test whose parent has not reaped it yet).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}

// Host adds a host named name (letters and digits, up to 8) to the lab.
func (l *Lab) Host(name string) *Host {
	l.t.Helper()
	if !regexp.MustCompile(`^[a-z0-9]{1,8}$`).MatchString(name) {
		l.t.Fatalf("nethost: host name %q: want 1-8 lower-case letters and digits", name)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, h := range l.hosts {
		if h.name == name {
			l.t.Fatalf("nethost: host %q exists", name)
		}
	}
	if len(l.hosts) == maxHosts {
		l.t.Fatalf("nethost: more than %d hosts", maxHosts)
	}
	i := len(l.hosts)
	h := &Host{lab: l, name: name, ns: l.name + name, ip: fmt.Sprintf("10.50.0.%d", 10+i)}
	port := fmt.Sprintf("p%d", i)
	steps := [][]string{
		{"ip", "netns", "add", h.ns},
		{"ip", "-n", h.ns, "link", "set", "lo", "up"},
		{"ip", "-n", l.hub, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", h.ns},
		{"ip", "-n", l.hub, "link", "set", port, "master", "br0", "up"},
		{"ip", "-n", h.ns, "addr", "add", h.ip + "/24", "dev", "eth0"},
		{"ip", "-n", h.ns, "link", "set", "eth0", "up"},
	}
	l.hosts = append(l.hosts, h)
	for _, s := range steps {
		if err := run(s...); err != nil {
			l.t.Fatalf("nethost: adding host %s: %v", name, err)
		}
	}
	// A veth pair carries packets once both ends report carrier, a moment
	// after they are set up; the bridge forwards at once (no STP).
	if err := waitUp(h.ns, "eth0"); err != nil {
		l.t.Fatalf("nethost: adding host %s: %v", name, err)
	}
	if err := waitUp(l.hub, port); err != nil {
		l.t.Fatalf("nethost: adding host %s: %v", name, err)
	}
	return h
}

// waitUp waits up to 10 s until link dev of namespace ns is operationally up.
func waitUp(ns, dev string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := output("ip", "-n", ns, "-o", "link", "show", "dev", dev)
		if err == nil && strings.Contains(out, "state UP") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("link %s in %s not up after 10 s: %s %v", dev, ns, out, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Close removes every namespace of the lab. Processes still running in a
// host lose its network but are not killed: their owners stop them first.
func (l *Lab) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	for _, err := range l.undelayLocked() {
		if err != nil {
			l.t.Logf("nethost: %v", err)
		}
	}
	for _, h := range l.hosts {
		if err := run("ip", "netns", "del", h.ns); err != nil {
			l.t.Logf("nethost: %v", err)
		}
	}
	if err := run("ip", "netns", "del", l.hub); err != nil {
		l.t.Logf("nethost: %v", err)
	}
}

func output(args ...string) (string, error) {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

func run(args ...string) error {
	cmd := exec.Command(args[0], args[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}
