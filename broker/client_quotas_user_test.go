package broker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// TestUserQuotaFollowsThePrincipal: a user quota applies to the SASL principal
// of the connection, not to an anonymous client of the same client id.
func TestUserQuotaFollowsThePrincipal(t *testing.T) {
	b := startSecureBroker(t, newPKI(t), nil)
	adm := kadm.NewClient(client(t, b.ListenerAddr("PLAINTEXT")))
	setQuota(t, adm, []kadm.ClientQuotaEntityComponent{{Type: "user", Name: strp("alice")}}, "producer_byte_rate", 10000)
	produce := func(opts ...kgo.Opt) time.Duration {
		t.Helper()
		var th atomic.Int64
		addr := b.ListenerAddr("PLAINTEXT")
		if len(opts) > 0 {
			addr = b.ListenerAddr("SASL_PLAINTEXT")
		}
		cl := client(t, addr, append(opts, kgo.ClientID("same"), kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.WithHooks(throttleHook(func(d time.Duration) { th.Add(int64(d)) })))...)
		value := make([]byte, 100<<10)
		for range 3 {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			err := cl.ProduceSync(ctx, &kgo.Record{Topic: "userq", Value: value}).FirstErr()
			cancel()
			if err != nil {
				t.Fatal(err)
			}
		}
		return time.Duration(th.Load())
	}
	if d := produce(); d != 0 {
		t.Fatalf("an anonymous client was throttled %v by alice's quota", d)
	}
	if d := produce(kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())); d == 0 {
		t.Fatal("alice, 300 KB against 10 KB/s, was never throttled")
	}
}
