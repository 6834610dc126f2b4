package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/ktoolhq/ktool/tools/setup"
)

// TestSecureUp: `cluster up --secure` on the embedded store comes up with
// SASL_SSL and SCRAM for clients and TLS between brokers; the saved profile,
// client.properties and kcat.conf reach it, a client without credentials does
// not, and kill/start/status work through the admin user.
func TestSecureUp(t *testing.T) {
	e := newEnv(t)
	base, _ := freeBase(t, 6)
	e.mustRun("cluster", "up", "--secure", "--embedded", "-n", "3", "--base-port", strconv.Itoa(base), "--dir", e.dir)
	for _, f := range []string{"client.properties", "kcat.conf", "admin.password", "broker-0/server.properties",
		"producer.password", "producer.properties", "consumer.password", "consumer.properties"} {
		st, err := os.Stat(filepath.Join(e.dir, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v (it holds a password: want mode 0600)", f, st, err)
		}
	}
	props, err := os.ReadFile(filepath.Join(e.dir, "broker-0", "server.properties"))
	if err != nil || !strings.Contains(string(props), "CLIENT:SASL_SSL,INTERNAL:SSL") {
		t.Fatalf("server.properties: %s %v", props, err)
	}
	// The saved profile (SCRAM-SHA-512 as admin over TLS) is current.
	e.mustRun("topic", "create", "sec", "-p", "3", "-r", "3")
	if out := e.mustRun("topic", "describe", "sec"); !strings.Contains(out, "Replication factor: 3") {
		t.Fatalf("describe: %s", out)
	}
	addr := "127.0.0.1:" + strconv.Itoa(base)
	noProfile := filepath.Join(t.TempDir(), "none.yaml") // no profile: only what the command line says
	if out := e.mustRun("--config-file", noProfile, "--brokers", addr, "--client-config", filepath.Join(e.dir, "client.properties"), "topic", "list"); !strings.Contains(out, "sec") {
		t.Fatalf("topic list with client.properties: %s", out)
	}
	if _, _, err := e.run("--config-file", noProfile, "--brokers", addr, "--tls-ca", setup.CAFile(e.dir), "--timeout", "3s", "topic", "list"); err == nil {
		t.Fatal("a client without SASL credentials listed topics")
	}
	if kcat, err := exec.LookPath("kcat"); err == nil {
		out, err := exec.Command(kcat, "-F", setup.KcatConfig(e.dir), "-L", "-t", "sec", "-m", "10").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "3 partitions") {
			t.Fatalf("kcat -F kcat.conf: %v\n%s", err, out)
		}
	}
	checkSampleACLs(t, e.dir, addr)
	e.mustRun("cluster", "kill", "1", "--dir", e.dir)
	e.mustRun("cluster", "start", "1", "--dir", e.dir)
	if out := e.mustRun("cluster", "status", "--dir", e.dir); strings.Count(out, "yes") < 3 {
		t.Fatalf("status after kill/start: %s", out)
	}
}

// checkSampleACLs: on a secure cluster the ACL authorizer is on; the sample
// producer may write demo-* only, the sample consumer may read demo-* in
// group demo-* and may not write, the admin may do everything, and the
// brokers (super users by their certificates) still replicate.
func checkSampleACLs(t *testing.T, dir, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pem, err := os.ReadFile(setup.CAFile(dir))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	client := func(user string, opts ...kgo.Opt) *kgo.Client {
		t.Helper()
		var pass string
		if user == setup.AdminUser {
			pass, err = setup.AdminPassword(dir)
		} else {
			pass, err = setup.UserPassword(dir, user)
		}
		if err != nil || pass == "" {
			t.Fatalf("%s's password: %q %v", user, pass, err)
		}
		base := []kgo.Opt{kgo.SeedBrokers(addr), kgo.DialTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}),
			kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()), kgo.RecordRetries(3), kgo.RetryTimeout(10 * time.Second)}
		cl, err := kgo.NewClient(append(base, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	admin := client(setup.AdminUser)
	adm := kadm.NewClient(admin)
	for _, topic := range []string{"demo-x", "other"} {
		if r, err := adm.CreateTopic(ctx, 2, 3, nil, topic); err != nil || r.Err != nil {
			t.Fatalf("admin creating %s: %v %v", topic, err, r.Err)
		}
	}
	// Replication between brokers works: every partition of demo-x gets its
	// three replicas in the ISR.
	for {
		md, err := adm.Metadata(ctx, "demo-x")
		full := err == nil && len(md.Topics["demo-x"].Partitions) == 2
		for _, p := range md.Topics["demo-x"].Partitions {
			full = full && p.Err == nil && len(p.ISR) == 3
		}
		if full {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("demo-x never reached an ISR of 3: %v %+v", err, md.Topics["demo-x"])
		}
		time.Sleep(100 * time.Millisecond)
	}

	producer := client(setup.ProducerUser)
	if err := producer.ProduceSync(ctx, &kgo.Record{Topic: "demo-x", Value: []byte("from producer")}).FirstErr(); err != nil {
		t.Fatalf("producer to demo-x: %v", err)
	}
	if err := producer.ProduceSync(ctx, &kgo.Record{Topic: "other", Value: []byte("no")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("producer to other: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	consumerWriter := client(setup.ConsumerUser, kgo.DisableIdempotentWrite())
	if err := consumerWriter.ProduceSync(ctx, &kgo.Record{Topic: "demo-x", Value: []byte("no")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("consumer producing to demo-x: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if err := admin.ProduceSync(ctx, &kgo.Record{Topic: "other", Value: []byte("from admin")}).FirstErr(); err != nil {
		t.Fatalf("admin to other: %v", err)
	}

	consume := func(user, group, topic, want string) {
		t.Helper()
		cl := client(user, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		for {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("%s consuming %s in %s: nothing before the deadline", user, topic, group)
			}
			if errs := fs.Errors(); len(errs) > 0 {
				t.Fatalf("%s consuming %s in %s: %v", user, topic, group, errs[0].Err)
			}
			for _, r := range fs.Records() {
				if string(r.Value) == want {
					if err := cl.CommitUncommittedOffsets(ctx); err != nil {
						t.Fatalf("%s committing in %s: %v", user, group, err)
					}
					return
				}
			}
		}
	}
	consume(setup.ConsumerUser, "demo-g", "demo-x", "from producer")
	consume(setup.AdminUser, "admin-g", "other", "from admin")
	consume(setup.AdminUser, "admin-g2", "demo-x", "from producer")
}
