package ui

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
)

// console is a `ktool ui` served by Run for one test.
type console struct {
	url string
}

// startConsole runs the command's Run against brokers until the test ends.
func startConsole(t *testing.T, brokers []string, mod func(*Options)) *console {
	t.Helper()
	env := cmdtest.NewEnv(t, brokers)
	t.Setenv("KTOOL_ZOOKEEPER", "")
	o := &Options{Factory: env.F, Listen: "127.0.0.1:0", Refresh: 500 * time.Millisecond}
	if mod != nil {
		mod(o)
	}
	ready := make(chan string, 1)
	o.Ready = func(addr string) { ready <- addr }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ktool ui: %v", err)
		}
	})
	select {
	case addr := <-ready:
		return &console{url: "http://" + addr}
	case err := <-done:
		t.Fatalf("ktool ui did not start: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("ktool ui did not start in 20s")
	}
	return nil
}

func (c *console) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(c.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// produce writes records to one partition and waits for their acks.
func produce(t *testing.T, brokers []string, recs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing: %v", err)
	}
}

// writeSecret writes a credential file only the owner can read.
func writeSecret(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(content+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func contains(t *testing.T, what, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Fatalf("%s lacks %q:\n%.2000s", what, w, body)
		}
	}
}
