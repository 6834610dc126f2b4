package broker_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/brokertest"
)

func strp(s string) *string { return &s }

// TestClientQuotaAPIs sets quotas through one broker with AlterClientQuotas,
// checks the znodes and notifications Kafka writes, and describes them through
// the other broker with each kind of filter, on both stores.
func TestClientQuotaAPIs(t *testing.T) {
	for _, store := range brokertest.Stores {
		t.Run(string(store), func(t *testing.T) {
			c := brokertest.NewCluster(t, 2, brokertest.WithStore(store))
			ctx := context.Background()
			cl0 := c.Client(kgo.SeedBrokers(c.Broker(0).Addr()))
			alter := func(entity []kadm.ClientQuotaEntityComponent, ops ...kadm.AlterClientQuotaOp) kadm.AlteredClientQuotas {
				t.Helper()
				res, err := kadm.NewClient(cl0).AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: entity, Ops: ops}})
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			set := func(k string, v float64) kadm.AlterClientQuotaOp { return kadm.AlterClientQuotaOp{Key: k, Value: v} }
			user := func(n *string) kadm.ClientQuotaEntityComponent {
				return kadm.ClientQuotaEntityComponent{Type: "user", Name: n}
			}
			client := func(n *string) kadm.ClientQuotaEntityComponent {
				return kadm.ClientQuotaEntityComponent{Type: "client-id", Name: n}
			}
			for _, e := range []struct {
				ent []kadm.ClientQuotaEntityComponent
				op  kadm.AlterClientQuotaOp
			}{
				{[]kadm.ClientQuotaEntityComponent{user(strp("alice"))}, set("producer_byte_rate", 1024)},
				{[]kadm.ClientQuotaEntityComponent{user(strp("alice")), client(strp("app 1"))}, set("consumer_byte_rate", 2048)},
				{[]kadm.ClientQuotaEntityComponent{user(nil), client(nil)}, set("request_percentage", 12.5)},
				{[]kadm.ClientQuotaEntityComponent{client(strp("app 1"))}, set("producer_byte_rate", 4096)},
				{[]kadm.ClientQuotaEntityComponent{client(nil)}, set("producer_byte_rate", 8192)},
			} {
				for _, r := range alter(e.ent, e.op) {
					if r.Err != nil {
						t.Fatalf("%v: %v", e.ent, r.Err)
					}
				}
			}
			// Refused entries: each fails alone.
			for _, bad := range []kadm.AlterClientQuotaOp{set("producer_byte_rate", 1.5), set("consumer_byte_rate", -1), set("no_such_quota", 1)} {
				res := alter([]kadm.ClientQuotaEntityComponent{user(strp("bob"))}, bad)
				if len(res) != 1 || res[0].Err == nil {
					t.Fatalf("%+v accepted: %+v", bad, res)
				}
			}

			// Kafka's znodes: sanitized names, <default>, users/<u>/clients/<c>.
			s := c.Broker(0).Store()
			data, _, err := s.Get(ctx, "/config/users/alice/clients/app%201")
			if err != nil {
				t.Fatal(err)
			}
			var z struct {
				Version int               `json:"version"`
				Config  map[string]string `json:"config"`
			}
			if err := json.Unmarshal(data, &z); err != nil || z.Version != 1 || z.Config["consumer_byte_rate"] != "2048" {
				t.Fatalf("znode %s: %v", data, err)
			}
			if data, _, err = s.Get(ctx, "/config/users/<default>/clients/<default>"); err != nil {
				t.Fatal(err)
			}
			if json.Unmarshal(data, &z) != nil || z.Config["request_percentage"] != "12.5" {
				t.Fatalf("default znode %s", data)
			}
			names, _, err := s.Children(ctx, "/config/changes")
			if err != nil {
				t.Fatal(err)
			}
			paths := map[string]bool{}
			for _, n := range names {
				d, _, err := s.Get(ctx, "/config/changes/"+n)
				if err != nil {
					continue
				}
				var ch struct {
					Version    int    `json:"version"`
					EntityPath string `json:"entity_path"`
				}
				if json.Unmarshal(d, &ch) == nil && ch.Version == 2 {
					paths[ch.EntityPath] = true
				}
			}
			for _, p := range []string{"users/alice", "users/alice/clients/app%201", "users/<default>/clients/<default>", "clients/app%201", "clients/<default>"} {
				if !paths[p] {
					t.Errorf("no change notification for %s (have %v)", p, paths)
				}
			}

			// Describe through the other broker.
			cl1 := c.Client(kgo.SeedBrokers(c.Broker(1).Addr()))
			describe := func(strict bool, comps ...kmsg.DescribeClientQuotasRequestComponent) map[string]map[string]float64 {
				t.Helper()
				req := kmsg.NewPtrDescribeClientQuotasRequest()
				req.Components, req.Strict = comps, strict
				resp, err := req.RequestWith(ctx, cl1)
				if err != nil {
					t.Fatal(err)
				}
				if resp.ErrorCode != 0 {
					t.Fatalf("error %d %v", resp.ErrorCode, resp.ErrorMessage)
				}
				out := map[string]map[string]float64{}
				for _, e := range resp.Entries {
					key := ""
					for _, c := range e.Entity {
						n := "<default>"
						if c.Name != nil {
							n = *c.Name
						}
						key += c.Type + "=" + n + ";"
					}
					out[key] = map[string]float64{}
					for _, v := range e.Values {
						out[key][v.Key] = v.Value
					}
				}
				return out
			}
			comp := func(typ string, match kmsg.QuotasMatchType, name *string) kmsg.DescribeClientQuotasRequestComponent {
				c := kmsg.NewDescribeClientQuotasRequestComponent()
				c.EntityType, c.MatchType, c.Match = typ, match, name
				return c
			}
			keys := func(m map[string]map[string]float64) []string {
				var out []string
				for k := range m {
					out = append(out, k)
				}
				return out
			}
			if got := describe(false); len(got) != 5 {
				t.Fatalf("describe all: %v", keys(got))
			}
			got := describe(false, comp("user", 0, strp("alice")))
			if len(got) != 2 || got["user=alice;"]["producer_byte_rate"] != 1024 || got["user=alice;client-id=app 1;"]["consumer_byte_rate"] != 2048 {
				t.Fatalf("user alice: %v", got)
			}
			if got := describe(true, comp("user", 0, strp("alice"))); len(got) != 1 || got["user=alice;"] == nil {
				t.Fatalf("user alice strict: %v", got)
			}
			if got := describe(false, comp("user", 1, nil)); len(got) != 1 || got["user=<default>;client-id=<default>;"]["request_percentage"] != 12.5 {
				t.Fatalf("default user: %v", got)
			}
			if got := describe(true, comp("client-id", 2, nil)); len(got) != 2 || got["client-id=app 1;"]["producer_byte_rate"] != 4096 || got["client-id=<default>;"] == nil {
				t.Fatalf("any client strict: %v", got)
			}
			if got := describe(false, comp("user", 2, nil), comp("client-id", 0, strp("app 1"))); len(got) != 1 {
				t.Fatalf("any user, client app 1: %v", keys(got))
			}
			req := kmsg.NewPtrDescribeClientQuotasRequest()
			req.Components = []kmsg.DescribeClientQuotasRequestComponent{comp("user", 0, nil)}
			if resp, err := req.RequestWith(ctx, cl1); err != nil || resp.ErrorCode == 0 {
				t.Fatalf("exact match without a name: %v %v", resp, err)
			}

			// Removing the last quota of a user that has client entities keeps the znode.
			for _, r := range alter([]kadm.ClientQuotaEntityComponent{user(strp("alice"))}, kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Remove: true}) {
				if r.Err != nil {
					t.Fatal(r.Err)
				}
			}
			if got := describe(false, comp("user", 0, strp("alice"))); len(got) != 1 {
				t.Fatalf("after removal: %v", keys(got))
			}
		})
	}
}

// produceRate runs a producer until stop, counting the record bytes acknowledged.
func produceRate(cl *kgo.Client, topic string, stop <-chan struct{}, acked *atomic.Int64) {
	value := make([]byte, 8<<10)
	for {
		select {
		case <-stop:
			return
		default:
		}
		cl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: value}, func(r *kgo.Record, err error) {
			if err == nil {
				acked.Add(int64(len(r.Value)))
			}
		})
	}
}

// TestProduceQuotaThrottles measures a producer under a 1 MB/s
// producer_byte_rate quota (set on its client id, applied on the other broker
// through the change notification) while an unthrottled producer writes to the
// same broker. The achieved rate is the bytes acknowledged in the steady state
// over 10 s (30 s with Kafka's default windows under KTOOL_QUOTA_LONG=1; the
// default suite uses quota.window.num=4), and must be within ±10% of the quota.
// The steady state starts a second after the client's first throttle: before
// it, as in Kafka, a new client may send its bound over (samples-1) windows at
// once. With the throttle capped at one window, as it was, and the default
// 1 MB requests, the client ran 10-40% over its quota here
// (TestGreedyClientsHeldToTheirQuota in broker/quota shows why).
func TestProduceQuotaThrottles(t *testing.T) {
	props := map[string]string{"metrics.listener": "127.0.0.1:0", "quota.window.num": "4"}
	settle, measure, tolerance := time.Second, 10*time.Second, 0.10
	if os.Getenv("KTOOL_QUOTA_LONG") != "" {
		props["quota.window.num"] = "11"
		measure = 30 * time.Second
	}
	c := brokertest.NewCluster(t, 2, brokertest.WithProps(props))
	ctx := context.Background()
	adm := kadm.NewClient(c.Client(kgo.SeedBrokers(c.Broker(0).Addr())))
	// The partition lives on broker 1; the quota is set through broker 0.
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "quoted", -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{1}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	req.Topics, req.TimeoutMillis = append(req.Topics, rt), 10000
	if resp, err := req.RequestWith(ctx, c.Client()); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v %+v", err, resp)
	}
	const quota = 1 << 20
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: []kadm.ClientQuotaEntityComponent{{Type: "client-id", Name: strp("throttled")}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: quota}},
	}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("alter: %v %v", err, res)
	}
	var throttles [2]atomic.Int64
	client := func(id string, i int) *kgo.Client {
		return c.Client(kgo.ClientID(id), kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.ProducerLinger(0), kgo.MaxBufferedRecords(256),
			// Requests of at most a quarter of a second's quota, so that
			// the bytes acknowledged in 10 s are not counted in steps of
			// a tenth of it.
			kgo.ProducerBatchMaxBytes(256<<10),
			kgo.WithHooks(throttleHook(func(d time.Duration) { throttles[i].Add(int64(d)) })))
	}
	slow, fast := client("throttled", 0), client("free", 1)
	var slowBytes, fastBytes atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{}, 2)
	go func() { produceRate(slow, "quoted", stop, &slowBytes); done <- struct{}{} }()
	go func() { produceRate(fast, "quoted", stop, &fastBytes); done <- struct{}{} }()
	// The steady state starts once the client has used up its first burst,
	// which its first throttle tells: from then on it owes a wait on every
	// request. The quota reaches broker 1 through the change notification,
	// so the burst may start late.
	deadline := time.Now().Add(30 * time.Second)
	for throttles[0].Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the throttled client was not throttled within 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(settle)
	s0, f0, start := slowBytes.Load(), fastBytes.Load(), time.Now()
	time.Sleep(measure)
	s, f := slowBytes.Load()-s0, fastBytes.Load()-f0
	elapsed := time.Since(start)
	close(stop)
	<-done
	<-done
	slowRate, fastRate := float64(s)/elapsed.Seconds(), float64(f)/elapsed.Seconds()
	t.Logf("over %v: throttled client %.0f B/s (quota %d, %.1f%%), unthrottled client %.0f B/s; throttle time given %v / %v",
		elapsed.Round(time.Millisecond), slowRate, quota, 100*(slowRate-quota)/quota, fastRate,
		time.Duration(throttles[0].Load()), time.Duration(throttles[1].Load()))
	if math.Abs(slowRate-quota)/quota > tolerance {
		t.Errorf("throttled client at %.0f B/s, more than %.0f%% from its %d B/s quota", slowRate, 100*tolerance, quota)
	}
	if fastRate < 3*quota {
		t.Errorf("unthrottled client at %.0f B/s only", fastRate)
	}
	if throttles[0].Load() == 0 || throttles[1].Load() != 0 {
		t.Errorf("throttle_time_ms seen: throttled %v, free %v", throttles[0].Load(), throttles[1].Load())
	}
	// The broker's metrics show the rate and the throttle time of the client id.
	fams := scrape(t, c.Broker(1).MetricsAddr())
	labels := map[string]string{"quota": "producer_byte_rate", "user": "", "client_id": "throttled"}
	if b := value(fams, "ktool_quota_bound", labels); b != quota {
		t.Errorf("ktool_quota_bound = %v", b)
	}
	if th := value(fams, "ktool_quota_throttle_seconds_total", labels); th <= 0 {
		t.Errorf("ktool_quota_throttle_seconds_total = %v", th)
	}
	slow.Close()
	fast.Close()
}

type throttleHook func(time.Duration)

func (h throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		h(d)
	}
}
