package broker_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/broker/brokertest"
)

func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// value sums a family's samples whose labels include want.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f, ok := fams[name]
	if !ok {
		return -1
	}
	var sum float64
	for _, m := range f.Metric {
		match := true
		for k, v := range want {
			found := false
			for _, l := range m.Label {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			match = match && found
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

// TestMetricsEndpoint scrapes /metrics with the Prometheus text parser: traffic
// moves the request, bytes and message counters; a dead follower shows as an
// under-replicated partition and its return as an ISR expansion; /healthz and
// /readyz answer.
func TestMetricsEndpoint(t *testing.T) {
	c := brokertest.NewCluster(t, 2, brokertest.WithProps(map[string]string{
		"metrics.listener":             "127.0.0.1:0",
		"auto.leader.rebalance.enable": "false",
	}))
	adm := c.Admin()
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 1, 2, nil, "metered"); err != nil {
		t.Fatal(err)
	}
	v, _, _ := describeWait(t, adm, "metered")
	leader := v[0].Leader
	addr := c.Broker(leader).MetricsAddr()
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", path, err, resp)
		}
		resp.Body.Close()
	}
	before := scrape(t, addr)
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := range 50 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "metered", Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	consumeN(t, c, "metered", 0, 50)
	after := scrape(t, addr)
	if got := value(after, "ktool_broker_messages_in_total", map[string]string{"topic": "metered"}) -
		max(0, value(before, "ktool_broker_messages_in_total", map[string]string{"topic": "metered"})); got != 50 {
		t.Fatalf("messages_in moved by %v, want 50", got)
	}
	if value(after, "ktool_broker_bytes_out_total", map[string]string{"topic": "metered", "reader": "consumer"}) <= 0 {
		t.Fatal("bytes_out for consumers did not move")
	}
	if value(after, "ktool_broker_requests_total", map[string]string{"api": "Produce"}) <= value(before, "ktool_broker_requests_total", map[string]string{"api": "Produce"}) {
		t.Fatal("Produce request count did not move")
	}
	if value(after, "ktool_broker_request_duration_seconds", map[string]string{"api": "Produce"}) <= 0 {
		t.Fatal("no Produce latency samples")
	}
	if value(after, "ktool_broker_request_queue_seconds", map[string]string{"api": "Produce"}) <= 0 {
		t.Fatal("no Produce queue-time samples")
	}
	if value(after, "ktool_replica_under_replicated_partitions", nil) != 0 {
		t.Fatal("under-replicated before any failure")
	}
	c.Kill(1 - leader)
	brokertest.Eventually(t, 20*time.Second, func() error {
		m := scrape(t, addr)
		if got := value(m, "ktool_replica_under_replicated_partitions", nil); got < 1 {
			return fmt.Errorf("under_replicated_partitions = %v after the follower died", got)
		}
		return nil
	})
	// The follower comes back: the leader adds it to the ISR again.
	c.Restart(1 - leader)
	brokertest.Eventually(t, 20*time.Second, func() error {
		m := scrape(t, addr)
		if got := value(m, "ktool_replica_isr_expands_total", nil); got < 1 {
			return fmt.Errorf("isr_expands_total = %v after the follower returned", got)
		}
		if got := value(m, "ktool_replica_under_replicated_partitions", nil); got != 0 {
			return fmt.Errorf("under_replicated_partitions = %v", got)
		}
		return nil
	})
}

// TestMetricsPprof: the listener serves /debug/pprof/ only with
// metrics.pprof.enable=true.
func TestMetricsPprof(t *testing.T) {
	status := func(addr string) int {
		t.Helper()
		resp, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, on := range []bool{false, true} {
		c := brokertest.NewCluster(t, 1, brokertest.WithProps(map[string]string{
			"metrics.listener":     "127.0.0.1:0",
			"metrics.pprof.enable": fmt.Sprint(on),
		}))
		want := http.StatusNotFound
		if on {
			want = http.StatusOK
		}
		if got := status(c.Broker(0).MetricsAddr()); got != want {
			t.Fatalf("metrics.pprof.enable=%v: /debug/pprof/goroutine answered %d, want %d", on, got, want)
		}
	}
}
