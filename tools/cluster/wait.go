package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// registration is what the cluster's metadata says about its brokers.
type registration struct {
	ClusterID  string
	Controller int32
	Brokers    []int32
}

// readRegistration asks the brokers at addrs for metadata, bounded by d.
func readRegistration(ctx context.Context, f *cmdutil.Factory, addrs []string, d time.Duration, sec []kgo.Opt) (registration, error) {
	opts := append([]kgo.Opt{kgo.SeedBrokers(addrs...), kgo.ClientID("ktool-cluster"), kgo.DialTimeout(d)}, sec...)
	opts = append(opts, f.ClientOpts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return registration{}, err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	m, err := cmdutil.Metadata(rctx, kadm.NewClient(cl))
	if err != nil {
		return registration{}, err
	}
	r := registration{ClusterID: m.Cluster, Controller: m.Controller}
	for _, b := range m.Brokers {
		r.Brokers = append(r.Brokers, b.NodeID)
	}
	slices.Sort(r.Brokers)
	return r, nil
}

// waitRegistered polls until every broker of want is registered and a
// controller is elected among the registered brokers. check is called on
// every round and ends the wait with its error (a process that died).
func waitRegistered(ctx context.Context, f *cmdutil.Factory, addrs []string, want []int32, timeout time.Duration, sec []kgo.Opt, check func() error) (registration, error) {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last registration
	var lastErr error
	for {
		if err := check(); err != nil {
			return last, err
		}
		r, err := readRegistration(ctx, f, addrs, 2*time.Second, sec)
		if err == nil {
			last, lastErr = r, nil
			if containsAll(r.Brokers, want) && slices.Contains(r.Brokers, r.Controller) {
				return r, nil
			}
		} else {
			lastErr = err
		}
		if time.Now().After(deadline) {
			if lastErr != nil {
				return last, fmt.Errorf("brokers %v not up after %s: %v", want, timeout, lastErr)
			}
			return last, fmt.Errorf("after %s: registered brokers %v, controller %d; want brokers %v and a controller", timeout, last.Brokers, last.Controller, want)
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-tick.C:
		}
	}
}

func containsAll(have, want []int32) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// waitZooKeeper polls ZooKeeper's ruok until it answers imok.
func waitZooKeeper(ctx context.Context, addr string, timeout time.Duration, check func() error) error {
	return waitFourLetters(ctx, addr, timeout, check, ruok)
}

// waitServing polls a node of an ensemble with srvr until it serves, that is
// until the ensemble has a leader (ruok answers imok before that).
func waitServing(ctx context.Context, addr string, timeout time.Duration, check func() error) error {
	return waitFourLetters(ctx, addr, timeout, check, serving)
}

func waitFourLetters(ctx context.Context, addr string, timeout time.Duration, check func() error, ok func(context.Context, string) bool) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := check(); err != nil {
			return err
		}
		if ok(ctx, addr) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ZooKeeper on %s did not answer after %s", addr, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func ruok(ctx context.Context, addr string) bool {
	return strings.HasPrefix(fourLetters(ctx, addr, "ruok"), "imok")
}

// serving reports whether the server at addr serves clients: its srvr
// answer names its mode (leader, follower or standalone).
func serving(ctx context.Context, addr string) bool {
	return strings.Contains(fourLetters(ctx, addr, "srvr"), "Mode: ")
}

// fourLetters is the answer to a four-letter word, "" when there is none.
func fourLetters(ctx context.Context, addr, cmd string) string {
	d := net.Dialer{Timeout: time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return ""
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte(cmd)); err != nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(conn, 64<<10))
	return string(b)
}

// logTail is the end of a log file, for error messages.
func logTail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// exitedError says a process died, with the end of its log.
func exitedError(what string, p *Proc) error {
	tail := logTail(p.Log, 15)
	if tail == "" {
		return fmt.Errorf("%s (pid %d) exited; see %s", what, p.PID, p.Log)
	}
	return fmt.Errorf("%s (pid %d) exited; the end of %s:\n%s", what, p.PID, p.Log, tail)
}
