package nethost

import (
	"errors"
	"fmt"
	"strconv"
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
	return l.loss(percent, []string{"ip saddr " + h.ip, "ip daddr " + h.ip})
}

// LinkLoss drops percent (1..100) of the packets between a and b, both ways,
// each packet drawn at random; their traffic with other hosts is untouched.
func (l *Lab) LinkLoss(a, b *Host, percent int) error {
	if a == b {
		return fmt.Errorf("nethost: link loss from %s to itself", a.name)
	}
	return l.loss(percent, []string{
		fmt.Sprintf("ip saddr %s ip daddr %s", a.ip, b.ip),
		fmt.Sprintf("ip saddr %s ip daddr %s", b.ip, a.ip),
	})
}

func (l *Lab) loss(percent int, matches []string) error {
	if percent < 1 || percent > 100 {
		return fmt.Errorf("nethost: loss %d%%: want 1..100", percent)
	}
	draw := fmt.Sprintf(" numgen random mod 100 < %d", percent)
	if percent == 100 {
		draw = ""
	}
	for _, m := range matches {
		if err := l.rule(m + draw + " drop"); err != nil {
			return err
		}
	}
	return nil
}

// Delay holds every packet h sends to the hosts of to (to every host when to
// is empty) for d (queue.go): with jitter, packets are reordered. A host has
// one delay at a time; Heal removes it.
func (l *Lab) Delay(h *Host, d Delay, to ...*Host) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errors.New("nethost: the lab is closed")
	}
	if _, ok := l.queues[h]; ok {
		return fmt.Errorf("nethost: host %s is delayed already", h.name)
	}
	q, err := openQueue(h, d)
	if err != nil {
		return err
	}
	l.queues[h] = q
	rule := []string{"ip", "netns", "exec", h.ns, "iptables", "-w", "-A", "OUTPUT", "-o", "eth0"}
	// --queue-bypass: should the queue be gone (the test process killed),
	// packets pass instead of being dropped.
	target := []string{"-j", "NFQUEUE", "--queue-num", strconv.Itoa(queueNum), "--queue-bypass"}
	if len(to) == 0 {
		return run(append(rule, target...)...)
	}
	for _, o := range to {
		if err := run(append(append(rule, "-d", o.ip), target...)...); err != nil {
			return err
		}
	}
	return nil
}

// Delayed is how many packets were held by delays so far.
func (l *Lab) Delayed() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.delayed
	for _, q := range l.queues {
		n += q.queued.Load()
	}
	return n
}

// Heal removes every fault.
func (l *Lab) Heal() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	errs := []error{run("ip", "netns", "exec", l.hub, "nft", "flush chain bridge ktool faults")}
	errs = append(errs, l.undelayLocked()...)
	return errors.Join(errs...)
}

// undelayLocked removes every delay: the rules first, so that nothing more
// is queued, then the queues, which let go of what they hold. mu held.
func (l *Lab) undelayLocked() []error {
	var errs []error
	for h, q := range l.queues {
		errs = append(errs, run("ip", "netns", "exec", h.ns, "iptables", "-w", "-F", "OUTPUT"), q.close())
		l.delayed += q.queued.Load()
		delete(l.queues, h)
	}
	return errs
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
