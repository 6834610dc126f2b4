package broker_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/ktoolhq/ktool/broker"
	"github.com/ktoolhq/ktool/broker/config"
	"github.com/ktoolhq/ktool/internal/certgen"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// pki is a test CA with a broker certificate and client certificates.
type pki struct {
	dir       string
	ca        *certgen.Pair
	caFile    string
	server    certgen.Files
	client    *tls.Config // trusted client certificate, CN=client-1
	noCert    *tls.Config // trusts the CA, presents nothing
	untrusted *tls.Config // certificate from another CA
	expired   *tls.Config // expired certificate from the right CA
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	p := &pki{dir: t.TempDir()}
	var err error
	if p.ca, err = certgen.NewCA("test-ca", time.Hour); err != nil {
		t.Fatal(err)
	}
	if p.caFile, _, _, err = p.ca.WriteCA(p.dir, "changeit"); err != nil {
		t.Fatal(err)
	}
	// Client: brokers present it to each other too.
	srv, err := p.ca.Sign(certgen.Options{CommonName: "broker", Hosts: []string{"127.0.0.1", "localhost"}, Client: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.server, err = srv.WriteFiles(p.dir, "broker", p.ca, "changeit"); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(p.ca.Cert)
	clientCfg := func(ca *certgen.Pair, o certgen.Options) *tls.Config {
		pair, err := ca.Sign(o)
		if err != nil {
			t.Fatal(err)
		}
		return &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{{
			Certificate: [][]byte{pair.Cert.Raw}, PrivateKey: pair.Key, Leaf: pair.Cert}}}
	}
	p.client = clientCfg(p.ca, certgen.Options{CommonName: "client-1", Client: true})
	other, err := certgen.NewCA("other-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p.untrusted = clientCfg(other, certgen.Options{CommonName: "intruder", Client: true})
	p.expired = clientCfg(p.ca, certgen.Options{CommonName: "old", Client: true,
		NotBefore: time.Now().Add(-48 * time.Hour), Validity: 24 * time.Hour})
	p.noCert = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	return p
}

// serverPEM writes the broker's key and chain into one PEM keystore file.
func (p *pki) serverPEM(t *testing.T) string {
	t.Helper()
	crt, err := os.ReadFile(p.server.Cert)
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(p.server.Key)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(p.dir, "broker.pem")
	if err := os.WriteFile(f, append(key, crt...), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// startSecureBroker runs a standalone broker with one listener of each
// protocol. PLAIN knows alice; SCRAM users are created by the tests.
func startSecureBroker(t *testing.T, p *pki, extra map[string]string) *broker.Broker {
	t.Helper()
	props := map[string]string{
		"broker.id": "0", "log.dirs": t.TempDir(),
		"listeners":                        "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SSL://127.0.0.1:0",
		"offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "2", "group.initial.rebalance.delay.ms": "0",
		"sasl.jaas.config":                              `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`,
		"ssl.keystore.type":                             "PEM",
		"ssl.keystore.location":                         p.serverPEM(t),
		"ssl.truststore.type":                           "PKCS12",
		"ssl.truststore.location":                       filepath.Join(p.dir, "ca-truststore.p12"),
		"ssl.truststore.password":                       "changeit",
		"listener.name.ssl.ssl.client.auth":             "required",
		"listener.name.ssl.ssl.principal.mapping.rules": "RULE:^CN=([^,]+),.*$/$1/U",
	}
	for k, v := range extra {
		props[k] = v
	}
	cfg, err := config.NewBroker(props)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	if os.Getenv("KTOOL_TEST_LOGS") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	b, err := broker.New(broker.Options{Config: cfg, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = b.Shutdown(ctx)
	})
	select {
	case <-b.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("broker not ready")
	}
	return b
}

func client(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RetryTimeout(5 * time.Second),
		kgo.DefaultProduceTopic("sec"), kgo.AllowAutoTopicCreation()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func ping(cl *kgo.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.Ping(ctx)
}

// roundTrip produces a record and reads it back on the same connection settings.
func roundTrip(t *testing.T, addr, topic string, opts ...kgo.Opt) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p := client(t, addr, opts...)
	val := "v-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(val)}).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", addr, err)
	}
	c := client(t, addr, append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	for {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume from %s: %v", addr, err)
		}
		for _, r := range fs.Records() {
			if string(r.Value) == val {
				return
			}
		}
	}
}

// TestListenersRegistrationAndMetadata: every listener is registered with its
// protocol in Kafka's JSON, and Metadata names the brokers by the listener the
// client came in on.
func TestListenersRegistrationAndMetadata(t *testing.T) {
	p := newPKI(t)
	b := startSecureBroker(t, p, map[string]string{
		"advertised.listeners": "SASL_PLAINTEXT://localhost:0",
	})
	data, _, err := b.Store().Get(context.Background(), zkdata.BrokerPath(0))
	if err != nil {
		t.Fatal(err)
	}
	info, err := zkdata.DecodeBrokerInfo(0, data)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range info.Endpoints {
		got[e.Listener] = e.SecurityProtocol + "@" + e.Host
	}
	want := map[string]string{"PLAINTEXT": "PLAINTEXT@127.0.0.1", "SASL_PLAINTEXT": "SASL_PLAINTEXT@localhost",
		"SASL_SSL": "SASL_SSL@127.0.0.1", "SSL": "SSL@127.0.0.1"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("registered endpoints %v, want %v\n%s", got, want, data)
	}
	if !strings.Contains(string(data), `"listener_security_protocol_map"`) {
		t.Fatalf("no protocol map in %s", data)
	}
	for _, tc := range []struct {
		listener string
		opts     []kgo.Opt
	}{
		{"PLAINTEXT", nil},
		{"SASL_PLAINTEXT", []kgo.Opt{kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())}},
		{"SSL", []kgo.Opt{kgo.DialTLSConfig(p.client)}},
	} {
		addr := b.ListenerAddr(tc.listener)
		cl := client(t, addr, tc.opts...)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		cancel()
		if err != nil {
			t.Fatalf("%s: metadata: %v", tc.listener, err)
		}
		_, port, _ := net.SplitHostPort(addr)
		if len(resp.Brokers) != 1 || strconv.Itoa(int(resp.Brokers[0].Port)) != port {
			t.Fatalf("%s: metadata brokers %+v, want port %s", tc.listener, resp.Brokers, port)
		}
	}
}

// TestSASLPlain: PLAIN against the JAAS users; a wrong password is
// SASL_AUTHENTICATION_FAILED.
func TestSASLPlain(t *testing.T) {
	p := newPKI(t)
	b := startSecureBroker(t, p, nil)
	addr := b.ListenerAddr("SASL_PLAINTEXT")
	roundTrip(t, addr, "plain", kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	for _, auth := range []plain.Auth{{User: "alice", Pass: "wrong"}, {User: "mallory", Pass: "alice-secret"}} {
		err := ping(client(t, addr, kgo.SASL(auth.AsMechanism())))
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("%s/%s: %v, want SASL_AUTHENTICATION_FAILED", auth.User, auth.Pass, err)
		}
	}
	// PLAIN over TLS too.
	roundTrip(t, b.ListenerAddr("SASL_SSL"), "plain-tls", kgo.DialTLSConfig(p.noCert),
		kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
}

// TestSCRAMCredentials: users made with AlterUserScramCredentials authenticate
// with SCRAM-SHA-256 and -512 over SASL_PLAINTEXT and SASL_SSL; Describe lists
// them; a deleted credential no longer authenticates.
func TestSCRAMCredentials(t *testing.T) {
	p := newPKI(t)
	b := startSecureBroker(t, p, nil)
	adm := kadm.NewClient(client(t, b.ListenerAddr("PLAINTEXT")))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bob-secret"},
		{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "bob-secret"},
		{User: "carol@example", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "carol-secret"},
	})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	// Kafka's layout: /config/users/<sanitized user>.
	data, _, err := b.Store().Get(ctx, "/config/users/carol%40example")
	if err != nil || !strings.Contains(string(data), `"SCRAM-SHA-512":"salt=`) {
		t.Fatalf("credential znode: %s, %v", data, err)
	}
	desc, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := desc["bob"]; len(d.CredInfos) != 2 || d.CredInfos[1].Iterations != 8192 {
		t.Fatalf("describe bob: %+v", d)
	}
	if _, ok := desc["carol@example"]; !ok {
		t.Fatalf("describe: %+v", desc)
	}
	// kadm refuses this before sending; the broker must as well.
	alter := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = "dave", 1, 100, []byte("salt"), []byte("salted")
	alter.Upsertions = append(alter.Upsertions, up)
	bad, err := alter.RequestWith(ctx, client(t, b.ListenerAddr("PLAINTEXT")))
	if err != nil || len(bad.Results) != 1 || bad.Results[0].ErrorCode != kerr.UnacceptableCredential.Code {
		t.Fatalf("100 iterations: %v %+v", err, bad)
	}

	for _, tc := range []struct{ listener, name string }{{"SASL_PLAINTEXT", "scram"}, {"SASL_SSL", "scram-tls"}} {
		opts := []kgo.Opt{}
		if tc.listener == "SASL_SSL" {
			opts = append(opts, kgo.DialTLSConfig(p.noCert))
		}
		addr := b.ListenerAddr(tc.listener)
		roundTrip(t, addr, tc.name+"-256", append(opts, kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism()))...)
		roundTrip(t, addr, tc.name+"-512", append(opts, kgo.SASL(scram.Auth{User: "carol@example", Pass: "carol-secret"}.AsSha512Mechanism()))...)
		for _, m := range []kgo.Opt{
			kgo.SASL(scram.Auth{User: "bob", Pass: "wrong"}.AsSha256Mechanism()),
			kgo.SASL(scram.Auth{User: "carol@example", Pass: "carol-secret"}.AsSha256Mechanism()), // no SHA-256 credential
			kgo.SASL(scram.Auth{User: "nobody", Pass: "x"}.AsSha512Mechanism()),
		} {
			if err := ping(client(t, addr, append(opts, m)...)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
				t.Fatalf("%s: bad credentials: %v, want SASL_AUTHENTICATION_FAILED", tc.listener, err)
			}
		}
	}
	del, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "bob", Mechanism: kadm.ScramSha256}}, nil)
	if err == nil {
		err = del.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	err = ping(client(t, b.ListenerAddr("SASL_PLAINTEXT"), kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism())))
	if !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("deleted credential: %v", err)
	}
	again, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "bob", Mechanism: kadm.ScramSha256}}, nil)
	if err != nil || !errors.Is(again["bob"].Err, kerr.ResourceNotFound) {
		t.Fatalf("deleting twice: %v %+v", err, again)
	}
}

// rawRequest writes one request frame (header v1) on conn.
func rawRequest(t *testing.T, conn net.Conn, req kmsg.Request) {
	t.Helper()
	buf := make([]byte, 4, 64)
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.Key()))
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.GetVersion()))
	buf = binary.BigEndian.AppendUint32(buf, 1)
	buf = binary.BigEndian.AppendUint16(buf, 1)
	buf = append(buf, 'x')
	buf = req.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	if _, err := conn.Write(buf); err != nil {
		t.Fatal(err)
	}
}

// expectClosed reads until the broker closes conn, failing if it answers.
func expectClosed(t *testing.T, conn net.Conn, what string) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := io.Copy(io.Discard, bufio.NewReader(conn))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: connection still open after 10s", what)
	}
	if n > 0 && !strings.Contains(what, "answer") {
		t.Fatalf("%s: broker answered %d bytes before closing", what, n)
	}
}

// TestBeforeAuthentication: on a SASL listener only ApiVersions, SaslHandshake
// and SaslAuthenticate are served; anything else closes the connection.
func TestBeforeAuthentication(t *testing.T) {
	p := newPKI(t)
	b := startSecureBroker(t, p, nil)
	addr := b.ListenerAddr("SASL_PLAINTEXT")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(1)
	rawRequest(t, conn, md)
	expectClosed(t, conn, "metadata before authentication")

	// A mechanism the listener does not enable: answered, then closed.
	conn2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "GSSAPI"
	rawRequest(t, conn2, hs)
	expectClosed(t, conn2, "unsupported mechanism answer")

	// The plaintext listener is unaffected.
	if err := ping(client(t, b.ListenerAddr("PLAINTEXT"))); err != nil {
		t.Fatal(err)
	}
}

// TestTLS: mTLS on the SSL listener accepts the CA's client certificate and
// refuses none, an untrusted and an expired one; garbage and plaintext Kafka
// on a TLS port close only that connection.
func TestTLS(t *testing.T) {
	p := newPKI(t)
	b := startSecureBroker(t, p, nil)
	addr := b.ListenerAddr("SSL")
	roundTrip(t, addr, "mtls", kgo.DialTLSConfig(p.client))
	for name, cfg := range map[string]*tls.Config{"no certificate": p.noCert, "untrusted": p.untrusted, "expired": p.expired} {
		if err := ping(client(t, addr, kgo.DialTLSConfig(cfg))); err == nil {
			t.Fatalf("%s client certificate accepted", name)
		}
	}
	// The client must not trust a broker certificate from another CA either.
	other := p.untrusted.Clone()
	other.Certificates = p.client.Certificates
	other.RootCAs = x509.NewCertPool()
	if err := ping(client(t, addr, kgo.DialTLSConfig(other))); err == nil {
		t.Fatal("client trusted an unknown CA")
	}
	for _, garbage := range [][]byte{[]byte("GET / HTTP/1.0\r\n\r\n"), {0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0, 0}, make([]byte, 4096)} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(garbage); err != nil {
			t.Fatal(err)
		}
		expectClosed(t, conn, "garbage answer") // a TLS alert may come back
		conn.Close()
	}
	roundTrip(t, addr, "mtls-after-garbage", kgo.DialTLSConfig(p.client))
	if err := ping(client(t, b.ListenerAddr("PLAINTEXT"))); err != nil {
		t.Fatal(err)
	}
}

// TestTLSReload: replacing the keystore file changes the certificate new
// connections get, without a restart.
func TestTLSReload(t *testing.T) {
	p := newPKI(t)
	b := startSecureBroker(t, p, nil)
	addr := b.ListenerAddr("SASL_SSL")
	serial := func() string {
		conn, err := tls.Dial("tcp", addr, p.noCert)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	before := serial()
	fresh, err := p.ca.Sign(certgen.Options{CommonName: "broker-renewed", Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	key, err := fresh.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(p.dir, "broker.pem.new")
	if err := os.WriteFile(tmp, append(key, fresh.CertPEM()...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(p.dir, "broker.pem")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for serial() == before {
		if time.Now().After(deadline) {
			t.Fatal("the broker still presents the old certificate after 20s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := serial(); got != fresh.Cert.SerialNumber.String() {
		t.Fatalf("serial %s, want the renewed certificate's %s", got, fresh.Cert.SerialNumber)
	}
}
