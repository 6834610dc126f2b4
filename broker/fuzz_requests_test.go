package broker

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/config"
)

// fuzzBroker is one standalone broker for a fuzz run, with limits that keep a
// hostile input's legitimate work small (a few partitions, short waits).
func fuzzBroker(f *testing.F) *Broker {
	cfg, err := config.NewBroker(map[string]string{
		"broker.id":                        "0",
		"log.dirs":                         f.TempDir(),
		"listeners":                        "PLAINTEXT://127.0.0.1:0",
		"max.broker.partitions":            "64",
		"group.initial.rebalance.delay.ms": "0",
		"offsets.topic.num.partitions":     "2",
		"connections.max.idle.ms":          "5000",
	})
	if err != nil {
		f.Fatal(err)
	}
	b, err := New(Options{Config: cfg})
	if err != nil {
		f.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = b.Shutdown(sctx)
	})
	select {
	case <-b.Ready():
	case <-ctx.Done():
		f.Fatal("fuzz broker not ready")
	}
	return b
}

// registered lists the API keys the registry serves, in key order.
func registered() []api {
	out := make([]api, 0, len(apis))
	for _, a := range apis {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

func frameFor(key, version int16, body []byte) []byte {
	req := kmsg.RequestForKey(key)
	req.SetVersion(version)
	buf := make([]byte, 4, 64+len(body))
	buf = kbin.AppendInt16(buf, key)
	buf = kbin.AppendInt16(buf, version)
	buf = kbin.AppendInt32(buf, 1)
	id := "fuzz"
	buf = kbin.AppendNullableString(buf, &id)
	if req.IsFlexible() {
		buf = append(buf, 0)
	}
	buf = append(buf, body...)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf
}

// FuzzRequests sends every request type the registry serves, at every version it
// serves, to a running broker: the seeds are each (key, version)'s empty request,
// so a plain `go test` covers every key (new ones included, as they register)
// and -fuzz mutates bodies. Whatever the input, no handler may panic and the
// broker must keep answering ApiVersions.
func FuzzRequests(f *testing.F) {
	b := fuzzBroker(f)
	keys := registered()
	for i, a := range keys {
		for v := a.min; v <= a.max; v++ {
			req := kmsg.RequestForKey(a.key)
			req.SetVersion(v)
			f.Add(uint8(i), uint8(v-a.min), req.AppendTo(nil))
		}
	}
	f.Fuzz(func(t *testing.T, which, version uint8, body []byte) {
		a := keys[int(which)%len(keys)]
		v := a.min + int16(version)%(a.max-a.min+1)
		c, err := net.DialTimeout("tcp", b.Addr(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write(frameFor(a.key, v, body)); err == nil {
			// An answer, a closed connection or (a long poll) nothing yet: all fine.
			_, _ = io.ReadFull(bufio.NewReader(c), make([]byte, 4))
		}
		if n := b.srv.Panics(); n > 0 {
			t.Fatalf("%s v%d: a handler panicked (%d so far; see the log)", kmsg.NameForKey(a.key), v, n)
		}
		if err := apiVersionsAnswers(b.Addr()); err != nil {
			t.Fatalf("after %s v%d: the broker no longer answers ApiVersions: %v", kmsg.NameForKey(a.key), v, err)
		}
	})
}

func apiVersionsAnswers(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(frameFor(18, 0, nil)); err != nil {
		return err
	}
	_, err = io.ReadFull(bufio.NewReader(c), make([]byte, 8))
	return err
}
