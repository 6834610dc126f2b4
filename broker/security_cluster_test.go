package broker_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/ktoolhq/ktool/broker/brokertest"
)

// TestSecureClusterFailover: three brokers on real ZooKeeper talk to each
// other over SASL_SSL (the controller's requests and follower fetches), clients
// use SCRAM over SASL_SSL on another listener, and acknowledged writes survive
// killing the partition leader.
func TestSecureClusterFailover(t *testing.T) {
	p := newPKI(t)
	props := map[string]string{
		"listeners":                                      "INTERNAL://127.0.0.1:0,CLIENT://127.0.0.1:0",
		"listener.security.protocol.map":                 "INTERNAL:SASL_SSL,CLIENT:SASL_SSL",
		"inter.broker.listener.name":                     "INTERNAL",
		"sasl.mechanism.inter.broker.protocol":           "PLAIN",
		"listener.name.internal.sasl.enabled.mechanisms": "PLAIN",
		"listener.name.internal.plain.sasl.jaas.config":  `org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="broker-secret" user_broker="broker-secret";`,
		"listener.name.client.sasl.enabled.mechanisms":   "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		"listener.name.client.plain.sasl.jaas.config":    `org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";`,
		"ssl.keystore.type":                              "PKCS12",
		"ssl.keystore.location":                          p.server.Keystore,
		"ssl.keystore.password":                          "changeit",
		"ssl.truststore.type":                            "PEM",
		"ssl.truststore.location":                        filepath.Join(p.dir, "ca.crt"),
		"min.insync.replicas":                            "2",
	}
	c := brokertest.NewCluster(t, 3, brokertest.WithStore(brokertest.ZooKeeper), brokertest.WithProps(props))
	seeds := func() []string {
		var out []string
		for _, id := range c.IDs() {
			out = append(out, c.Broker(id).ListenerAddr("CLIENT"))
		}
		return out
	}
	newClient := func(opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds()...), kgo.DialTLSConfig(p.noCert),
			kgo.RetryTimeout(30 * time.Second)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := kadm.NewClient(newClient(kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())))
	if res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "app", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "app-secret"}}); err != nil || res.Error() != nil {
		t.Fatalf("creating the SCRAM user: %v %v", err, res.Error())
	}
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "secure"); err != nil {
		t.Fatal(err)
	}
	app := kgo.SASL(scram.Auth{User: "app", Pass: "app-secret"}.AsSha512Mechanism())
	prod := newClient(app, kgo.DefaultProduceTopic("secure"), kgo.RequiredAcks(kgo.AllISRAcks()))
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
		}
	}
	leader := func() int32 {
		var l int32 = -1
		brokertest.Eventually(t, 30*time.Second, func() error {
			md, err := adm.Metadata(ctx, "secure")
			if err != nil {
				return err
			}
			pd := md.Topics["secure"].Partitions[0]
			if pd.Leader < 0 || len(pd.ISR) != 3 {
				return fmt.Errorf("leader %d isr %v", pd.Leader, pd.ISR)
			}
			l = pd.Leader
			return nil
		})
		return l
	}
	produce(0, 50)
	old := leader() // all three in the ISR: the followers fetch over SASL_SSL
	c.Kill(old)
	produce(50, 100)
	cons := newClient(app, kgo.ConsumeTopics("secure"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	for len(seen) < 100 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of 100 acknowledged records", len(seen))
		}
		for _, r := range fs.Records() {
			seen[string(r.Value)] = true
		}
	}
	c.Restart(old)
	brokertest.Eventually(t, 60*time.Second, func() error {
		md, err := adm.Metadata(ctx, "secure")
		if err != nil {
			return err
		}
		if isr := md.Topics["secure"].Partitions[0].ISR; len(isr) != 3 {
			return fmt.Errorf("isr %v after the restart", isr)
		}
		return nil
	})
}
