// Package proctest runs brokerproc brokers and clusters for a test: started
// or the test fails, stopped when it ends, their output logged when it failed.
package proctest

import (
	"testing"
	"time"

	"github.com/ktoolhq/ktool/internal/brokerproc"
	"github.com/ktoolhq/ktool/internal/zktest"
)

// Broker starts a broker for a test (brokerproc.Start), failing the test if it does not
// start. When the test ends the broker is stopped (SIGTERM, SIGKILL after
// stop) and, if the test failed, the tail of its output is logged.
func Broker(t testing.TB, spec brokerproc.Spec, stop time.Duration) *brokerproc.Broker {
	t.Helper()
	b, err := brokerproc.Start(spec)
	if b != nil {
		t.Cleanup(func() {
			begin := time.Now()
			if err := b.Stop(stop); err != nil {
				t.Logf("broker %d: %v", b.ID(), err)
			}
			t.Logf("broker %d stopped in %v", b.ID(), time.Since(begin).Round(time.Millisecond))
			if t.Failed() {
				t.Logf("broker %d output (last lines):\n%s", b.ID(), b.Tail(80))
			}
		})
	}
	if err != nil {
		t.Fatalf("starting broker %d: %v", spec.ID, err)
	}
	return b
}

// Cluster starts a ZooKeeper for the test (internal/zktest: the test is
// skipped without one, and fails with CI=true) and spec's brokers under
// chroot in it, with spec.Dir a new temporary directory when empty. When the
// test ends every broker is stopped (SIGTERM, SIGKILL after stop; at once
// when stop is 0) and, if the test failed, the tail of each one's output is
// logged.
func Cluster(t testing.TB, spec brokerproc.ClusterSpec, chroot string, stop time.Duration) *brokerproc.Cluster {
	t.Helper()
	zk := zktest.Start(t)
	spec.ZooKeeper = zk.Addr() + chroot
	if spec.Dir == "" {
		spec.Dir = t.TempDir()
	}
	c, err := brokerproc.NewCluster(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if stop > 0 {
			if err := c.Stop(stop); err != nil {
				t.Log(err)
			}
		} else {
			c.Kill()
		}
		if t.Failed() {
			for _, b := range c.Brokers() {
				t.Logf("broker %d output (last lines):\n%s", b.ID(), b.Tail(80))
			}
		}
	})
	for _, b := range c.Brokers() {
		if err := b.Launch(); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range c.Brokers() {
		if err := b.WaitReady(); err != nil {
			t.Fatal(err)
		}
	}
	return c
}
