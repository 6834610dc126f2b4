package uitest

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/broker/brokertest"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
	"github.com/ktoolhq/ktool/tools/ui"
)

// console is a `ktool ui` served by Run for one test.
type console struct {
	url string
}

// startConsole runs the command's Run against brokers until the test ends.
// get fetches path from the console, with its status code.
func (c *console) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(c.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func startConsole(t *testing.T, brokers []string, mod func(*ui.Options)) *console {
	t.Helper()
	env := cmdtest.NewEnv(t, brokers)
	t.Setenv("KTOOL_ZOOKEEPER", "")
	o := &ui.Options{Factory: env.F, Listen: "127.0.0.1:0", Refresh: 500 * time.Millisecond}
	if mod != nil {
		mod(o)
	}
	ready := make(chan string, 1)
	o.Ready = func(addr string) { ready <- addr }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ui.Run(ctx, o) }()
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

// produce writes records to one partition and waits for their acks.
func produce(t *testing.T, c *brokertest.Cluster, recs ...*kgo.Record) {
	t.Helper()
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing: %v", err)
	}
}
