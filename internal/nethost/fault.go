package nethost

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// The faults are rules in the hub's bridge (table bridge ktool, chain faults),
// matched on the hosts' addresses: a dropped packet vanishes silently, as on
// a broken link, so TCP connections hang and retransmit rather than fail
// fast. Heal removes them all.

// Cut drops every packet from each host of from to each host of to: one
// direction only (to's answers still reach from, but nothing from from
// arrives, so TCP connections in both directions stall).
func (l *Lab) Cut(from, to []*Host) error {
	for _, a := range from {
		for _, b := range to {
			if a == b {
				continue
			}
			if err := l.rule(fmt.Sprintf("ip saddr %s ip daddr %s drop", a.ip, b.ip)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Partition cuts a from b in both directions.
func (l *Lab) Partition(a, b []*Host) error {
	if err := l.Cut(a, b); err != nil {
		return err
	}
	return l.Cut(b, a)
}

// Isolate cuts h from every other host of the lab, both ways.
func (l *Lab) Isolate(h *Host) error {
	return l.Partition([]*Host{h}, l.others(h))
}

// Loss drops percent (1..100) of the packets sent or received by h, each
// packet drawn at random.
func (l *Lab) Loss(h *Host, percent int) error {
	if percent < 1 || percent > 100 {
		return fmt.Errorf("nethost: loss %d%%: want 1..100", percent)
	}
	draw := fmt.Sprintf(" numgen random mod 100 < %d", percent)
	if percent == 100 {
		draw = ""
	}
	for _, dir := range []string{"saddr", "daddr"} {
		if err := l.rule(fmt.Sprintf("ip %s %s%s drop", dir, h.ip, draw)); err != nil {
			return err
		}
	}
	return nil
}

// ErrNoNetem is returned by Netem when the kernel lacks tc netem.
var ErrNoNetem = errors.New("the kernel has no tc netem (CONFIG_NET_SCH_NETEM): delay and reordering cannot be emulated")

// Netem puts a netem queue with args (such as "delay 100ms 50ms reorder 25%")
// on h's link, for the packets h sends; Heal removes it.
func (l *Lab) Netem(h *Host, args string) error {
	if err := NetemAvailable(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	verb := "add"
	if l.netem[h] {
		verb = "change"
	}
	if err := run(append([]string{"ip", "netns", "exec", h.ns, "tc", "qdisc", verb, "dev", "eth0", "root", "netem"}, strings.Fields(args)...)...); err != nil {
		return err
	}
	l.netem[h] = true
	return nil
}

// NetemAvailable says why tc netem cannot be used here, if it cannot.
func NetemAvailable() error {
	probe := fmt.Sprintf("%s%d-netem%d", prefix, os.Getpid(), labSeq.Add(1))
	if err := run("ip", "netns", "add", probe); err != nil {
		return err
	}
	defer run("ip", "netns", "del", probe)
	if err := run("ip", "netns", "exec", probe, "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"); err != nil {
		return fmt.Errorf("%w: %v", ErrNoNetem, err)
	}
	return nil
}

// Heal removes every fault.
func (l *Lab) Heal() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	errs := []error{run("ip", "netns", "exec", l.hub, "nft", "flush chain bridge ktool faults")}
	for h := range l.netem {
		errs = append(errs, run("ip", "netns", "exec", h.ns, "tc", "qdisc", "del", "dev", "eth0", "root"))
		delete(l.netem, h)
	}
	return errors.Join(errs...)
}

// Rules lists the fault rules in force, for logs.
func (l *Lab) Rules() string {
	out, err := output("ip", "netns", "exec", l.hub, "nft", "list chain bridge ktool faults")
	if err != nil {
		return err.Error()
	}
	return out
}

func (l *Lab) rule(r string) error {
	return run("ip", "netns", "exec", l.hub, "nft", "add rule bridge ktool faults "+r)
}

func (l *Lab) others(h *Host) []*Host {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*Host
	for _, o := range l.hosts {
		if o != h {
			out = append(out, o)
		}
	}
	return out
}
