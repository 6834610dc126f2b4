package supervisor

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ktoolhq/ktool/internal/supervisor/control"
	"github.com/ktoolhq/ktool/plugins/codec"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func specs(t *testing.T, dir string, n int) ([]BrokerSpec, []string) {
	var out []BrokerSpec
	var addrs []string
	for id := range n {
		addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
		addrs = append(addrs, addr)
		out = append(out, BrokerSpec{
			ID: int32(id),
			Props: map[string]string{
				"broker.id":                        strconv.Itoa(id),
				"listeners":                        "PLAINTEXT://" + addr,
				"log.dirs":                         filepath.Join(dir, fmt.Sprintf("broker-%d", id), "data"),
				"offsets.topic.num.partitions":     "2",
				"group.initial.rebalance.delay.ms": "0",
			},
			LogFile: filepath.Join(dir, fmt.Sprintf("broker-%d", id), "broker.log"),
		})
	}
	return out, addrs
}

// waitBrokers polls metadata until exactly want are registered and a
// controller among them is elected.
func waitBrokers(t *testing.T, adm *kadm.Client, want []int32) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		m, err := adm.Metadata(kadm.WithAuthorizedOps(ctx))
		cancel()
		var got []int32
		if err == nil {
			for _, b := range m.Brokers {
				got = append(got, b.NodeID)
			}
			slices.Sort(got)
			if slices.Equal(got, want) && slices.Contains(want, m.Controller) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("brokers %v (controller err %v), want %v", got, err, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRunKillStartShutdown(t *testing.T) {
	dir := t.TempDir()
	bs, addrs := specs(t, dir, 3)
	socket := filepath.Join(dir, "s.sock")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{StoreDir: filepath.Join(dir, "store"), Brokers: bs}, socket, 20*time.Second, func() { close(ready) })
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Run ended before ready: %v", err)
	case <-ctx.Done():
		t.Fatal("not ready")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	waitBrokers(t, adm, []int32{0, 1, 2})

	resp, err := control.Call(ctx, socket, control.Request{Op: control.OpKill, Broker: 1})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Brokers[1].Running || !resp.Brokers[0].Running {
		t.Fatalf("after kill: %+v", resp.Brokers)
	}
	waitBrokers(t, adm, []int32{0, 2})
	if _, err := control.Call(ctx, socket, control.Request{Op: control.OpKill, Broker: 1}); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("second kill: %v", err)
	}
	if _, err := control.Call(ctx, socket, control.Request{Op: control.OpKill, Broker: 7}); err == nil || !strings.Contains(err.Error(), "no broker 7") {
		t.Fatalf("kill of unknown broker: %v", err)
	}
	resp, err = control.Call(ctx, socket, control.Request{Op: control.OpStart, Broker: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Brokers[1].Ready || resp.Brokers[1].Addr != addrs[1] {
		t.Fatalf("after start: %+v", resp.Brokers)
	}
	waitBrokers(t, adm, []int32{0, 1, 2})
	if _, err := control.Call(ctx, socket, control.Request{Op: "explode"}); err == nil {
		t.Fatal("unknown op accepted")
	}
	if _, err := Listen(ctx, socket); err == nil {
		t.Fatal("a second supervisor could listen on a live socket")
	}

	// A replicated topic: the shutdown must hand its leadership over cleanly.
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "replicated"); err != nil {
		t.Fatal(err)
	}
	if _, err := control.Call(ctx, socket, control.Request{Op: control.OpShutdown}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Run did not return after shutdown")
	}
	if _, err := control.Call(ctx, socket, control.Request{Op: control.OpStatus}); err == nil {
		t.Fatal("socket still answers after shutdown")
	}
	for _, b := range bs {
		log, err := os.ReadFile(b.LogFile)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"controlled shutdown request failed", "controlled shutdown incomplete"} {
			if strings.Contains(string(log), bad) {
				t.Errorf("broker %d: %q in its log:\n%s", b.ID, bad, log)
			}
		}
		if !strings.Contains(string(log), "broker stopped") {
			t.Errorf("broker %d never stopped:\n%s", b.ID, log)
		}
	}
}

func TestNewRejectsBadSpecs(t *testing.T) {
	dir := t.TempDir()
	bs, _ := specs(t, dir, 2)
	tests := []struct {
		name string
		edit func([]BrokerSpec) []BrokerSpec
		want string
	}{
		{"none", func([]BrokerSpec) []BrokerSpec { return nil }, "no brokers"},
		{"duplicate", func(b []BrokerSpec) []BrokerSpec { b[1].ID = 0; return b }, "listed twice"},
		{"id mismatch", func(b []BrokerSpec) []BrokerSpec { b[1].Props["broker.id"] = "5"; return b }, "broker.id=5"},
		{"zookeeper", func(b []BrokerSpec) []BrokerSpec { b[0].Props["zookeeper.connect"] = "x:1"; return b }, "zookeeper.connect"},
		{"no log", func(b []BrokerSpec) []BrokerSpec { b[0].LogFile = ""; return b }, "no log file"},
		{"bad setting", func(b []BrokerSpec) []BrokerSpec { b[0].Props["num.partitions"] = "zero"; return b }, "num.partitions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cp := make([]BrokerSpec, len(bs))
			for i, b := range bs {
				props := map[string]string{}
				for k, v := range b.Props {
					props[k] = v
				}
				cp[i] = BrokerSpec{ID: b.ID, Props: props, LogFile: b.LogFile}
			}
			_, err := New(Options{StoreDir: filepath.Join(t.TempDir(), "store"), Brokers: tt.edit(cp)})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// countingCodecs counts the lookups of the built-in codecs.
type countingCodecs struct {
	set     *codec.Set
	lookups atomic.Int64
}

func (c *countingCodecs) CodecByID(ctx context.Context, id int8) (codec.Codec, error) {
	c.lookups.Add(1)
	return c.set.CodecByID(ctx, id)
}

// TestBrokersUseTheGivenCodecs: supervised brokers resolve codecs through
// Options.Codecs (the plugin catalog of `cluster up`), as `ktool broker
// start` does, not through a set of their own.
func TestBrokersUseTheGivenCodecs(t *testing.T) {
	dir := t.TempDir()
	bs, addrs := specs(t, dir, 1)
	codecs := &countingCodecs{set: codec.NewSet(codec.Builtins()...)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{StoreDir: filepath.Join(dir, "store"), Brokers: bs, Codecs: codecs}, filepath.Join(dir, "s.sock"), 20*time.Second, func() { close(ready) })
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Run ended before ready: %v", err)
	case <-ctx.Done():
		t.Fatal("not ready")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ProducerBatchCompression(kgo.GzipCompression()),
		kgo.DefaultProduceTopic("gz"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	waitBrokers(t, kadm.NewClient(cl), []int32{0})
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strings.Repeat("compressible ", 100))}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if codecs.lookups.Load() == 0 {
		t.Fatal("a gzip batch was validated without a lookup in Options.Codecs")
	}
	cancel()
	<-done
}
