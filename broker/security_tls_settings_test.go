package broker_test

import (
	"context"
	"crypto/tls"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// handshake runs a bare TLS handshake against addr with cfg and returns the
// negotiated state.
func handshake(addr string, cfg *tls.Config) (tls.ConnectionState, error) {
	d := &tls.Dialer{Config: cfg}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer c.Close()
	return c.(*tls.Conn).ConnectionState(), nil
}

// TestTLSEnabledProtocols: ssl.enabled.protocols=TLSv1.3 on a listener refuses
// a client that speaks at most TLS 1.2 and serves a TLS 1.3 client; the other
// listeners keep the default (TLS 1.2 and 1.3).
func TestTLSEnabledProtocols(t *testing.T) {
	p := newPKI(t)
	b := startSecureBroker(t, p, map[string]string{"listener.name.ssl.ssl.enabled.protocols": "TLSv1.3"})
	addr := b.ListenerAddr("SSL")
	old := p.client.Clone()
	old.MaxVersion = tls.VersionTLS12
	if st, err := handshake(addr, old); err == nil {
		t.Fatalf("a TLS 1.2-only client was accepted (version %s)", tls.VersionName(st.Version))
	}
	if err := ping(client(t, addr, kgo.DialTLSConfig(old))); err == nil {
		t.Fatal("a TLS 1.2-only Kafka client was served")
	}
	st, err := handshake(addr, p.client)
	if err != nil {
		t.Fatal(err)
	}
	if st.Version != tls.VersionTLS13 {
		t.Fatalf("negotiated %s, want TLS 1.3", tls.VersionName(st.Version))
	}
	roundTrip(t, addr, "tls13", kgo.DialTLSConfig(p.client))
	// The SASL_SSL listener has the broker-wide default and still takes TLS 1.2.
	noCert12 := p.noCert.Clone()
	noCert12.MaxVersion = tls.VersionTLS12
	if st, err := handshake(b.ListenerAddr("SASL_SSL"), noCert12); err != nil || st.Version != tls.VersionTLS12 {
		t.Fatalf("TLS 1.2 on the default listener: %v (version %x)", err, st.Version)
	}
}

// TestTLSCipherSuites: with ssl.cipher.suites naming one TLS 1.2 suite, a
// client offering only another suite is refused, one offering the listed suite
// gets it, and a client that would prefer TLS 1.3 is held to TLS 1.2 (Go's
// TLS 1.3 suites cannot be restricted, and none is on the list, so TLS 1.3 is
// off as it is in Kafka with such a list).
func TestTLSCipherSuites(t *testing.T) {
	p := newPKI(t)
	const listed = tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
	b := startSecureBroker(t, p, map[string]string{"listener.name.ssl.ssl.cipher.suites": tls.CipherSuiteName(listed)})
	addr := b.ListenerAddr("SSL")
	only := func(suite uint16) *tls.Config {
		c := p.client.Clone()
		c.MaxVersion, c.CipherSuites = tls.VersionTLS12, []uint16{suite}
		return c
	}
	if st, err := handshake(addr, only(tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256)); err == nil {
		t.Fatalf("a client offering only an unlisted suite was accepted with %s", tls.CipherSuiteName(st.CipherSuite))
	}
	st, err := handshake(addr, only(listed))
	if err != nil {
		t.Fatalf("the listed suite: %v", err)
	}
	if st.CipherSuite != listed {
		t.Fatalf("negotiated %s, want %s", tls.CipherSuiteName(st.CipherSuite), tls.CipherSuiteName(listed))
	}
	roundTrip(t, addr, "listed-suite", kgo.DialTLSConfig(only(listed)))
	st, err = handshake(addr, p.client)
	if err != nil {
		t.Fatalf("a default client: %v", err)
	}
	if st.Version != tls.VersionTLS12 || st.CipherSuite != listed {
		t.Fatalf("a default client negotiated %s with %s, want TLS 1.2 with %s",
			tls.VersionName(st.Version), tls.CipherSuiteName(st.CipherSuite), tls.CipherSuiteName(listed))
	}
}

// TestTLSClientAuthRequested: with ssl.client.auth=requested a client without
// a certificate connects as ANONYMOUS, a client with one is its certificate's
// principal (mapped by ssl.principal.mapping.rules to CLIENT-1, a super user),
// and an untrusted certificate is still refused. The broker reaches itself on
// that listener with its own certificate (User:BROKER), so that ANONYMOUS
// need not be a super user.
func TestTLSClientAuthRequested(t *testing.T) {
	p := newPKI(t)
	b := startSecureBroker(t, p, map[string]string{
		"listener.name.ssl.ssl.client.auth": "requested",
		"authorizer.class.name":             "kafka.security.authorizer.AclAuthorizer",
		"super.users":                       "User:CLIENT-1;User:BROKER",
		"inter.broker.listener.name":        "SSL",
	})
	addr := b.ListenerAddr("SSL")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	anon := kadm.NewClient(client(t, addr, kgo.DialTLSConfig(p.noCert)))
	if _, err := anon.BrokerMetadata(ctx); err != nil {
		t.Fatalf("a client without a certificate: %v", err)
	}
	res, err := anon.CreateTopic(ctx, 1, 1, nil, "by-anonymous")
	if err == nil {
		err = res.Err
	}
	if !errors.Is(err, kerr.TopicAuthorizationFailed) && !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("ANONYMOUS created a topic: %v, want an authorization failure", err)
	}
	withCert := kadm.NewClient(client(t, addr, kgo.DialTLSConfig(p.client)))
	res, err = withCert.CreateTopic(ctx, 1, 1, nil, "by-client-1")
	if err == nil {
		err = res.Err
	}
	if err != nil {
		t.Fatalf("the certificate's principal User:CLIENT-1 (a super user) could not create a topic: %v", err)
	}
	// Go's client leaves out a certificate the server's CA list does not name;
	// this one sends it anyway.
	forced := p.untrusted.Clone()
	cert := forced.Certificates[0]
	forced.Certificates = nil
	forced.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	if err := ping(client(t, addr, kgo.DialTLSConfig(forced))); err == nil {
		t.Fatal("an untrusted client certificate was accepted")
	}
}
