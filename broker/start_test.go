package broker_test

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ktoolhq/ktool/broker"
	"github.com/ktoolhq/ktool/broker/config"
)

func newBroker(t *testing.T, props map[string]string) (*broker.Broker, error) {
	t.Helper()
	cfg, err := config.NewBroker(props)
	if err != nil {
		t.Fatal(err)
	}
	return broker.New(broker.Options{Config: cfg, Logger: slog.New(slog.DiscardHandler)})
}

// TestDataDirLock: a second broker on the same data dir is refused.
func TestDataDirLock(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{"broker.id": "0", "log.dirs": dir, "listeners": "PLAINTEXT://127.0.0.1:0"}
	b1, err := newBroker(t, props)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := b1.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer b1.Shutdown(ctx)
	b2, err := newBroker(t, props)
	if err != nil {
		t.Fatal(err)
	}
	err = b2.Start(ctx)
	if err == nil || !strings.Contains(err.Error(), "in use by another broker") {
		t.Fatalf("second broker on the same dir: %v", err)
	}
}

// TestDeadZooKeeperAtStart: an unreachable ZooKeeper gives a clear error naming
// the address once the start deadline passes, not a crash.
func TestDeadZooKeeperAtStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	b, err := newBroker(t, map[string]string{
		"broker.id": "0", "log.dirs": t.TempDir(), "listeners": "PLAINTEXT://127.0.0.1:0",
		"zookeeper.connect": addr, "zookeeper.session.timeout.ms": "2000",
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = b.Start(ctx)
	if err == nil {
		b.Shutdown(context.Background())
		t.Fatal("started without ZooKeeper")
	}
	if !strings.Contains(err.Error(), "coordination store") {
		t.Fatalf("error does not say what failed: %v", err)
	}
}
