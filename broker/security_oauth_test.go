package broker_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/ktoolhq/ktool/internal/certgen"
)

func unsecuredToken(t *testing.T, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]string{"alg": "none"}) + "." + enc(claims) + "."
}

// TestOAuthBearer: unsecured tokens (KIP-255) on SASL_PLAINTEXT with a
// required scope, and JWTs signed by a key of a JWKS file (KIP-768) on
// SASL_SSL with an expected issuer and audience; expired, unscoped, unsigned,
// wrongly signed and wrong-audience tokens fail with SASL_AUTHENTICATION_FAILED.
func TestOAuthBearer(t *testing.T) {
	p := newPKI(t)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b64 := func(n *big.Int) string { return base64.RawURLEncoding.EncodeToString(n.Bytes()) }
	jwks, err := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "kid": "k1", "use": "sig", "n": b64(key.N), "e": b64(big.NewInt(int64(key.E))),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	jwksFile := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwksFile, jwks, 0o644); err != nil {
		t.Fatal(err)
	}
	b := startSecureBroker(t, p, map[string]string{
		"sasl.enabled.mechanisms":                                   "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
		"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredValidatorRequiredScope="kafka";`,
		"listener.name.sasl_ssl.sasl.oauthbearer.jwks.endpoint.url": "file:" + jwksFile,
		"listener.name.sasl_ssl.sasl.oauthbearer.expected.issuer":   "https://idp.test",
		"listener.name.sasl_ssl.sasl.oauthbearer.expected.audience": "kafka-cluster",
	})
	now := time.Now()
	bearer := func(tok string) kgo.Opt { return kgo.SASL(oauth.Auth{Token: tok}.AsMechanism()) }
	plainAddr, tlsAddr := b.ListenerAddr("SASL_PLAINTEXT"), b.ListenerAddr("SASL_SSL")

	good := unsecuredToken(t, map[string]any{"sub": "svc-a", "exp": now.Add(time.Hour).Unix(), "iat": now.Unix(), "scope": "kafka other"})
	roundTrip(t, plainAddr, "oauth-unsecured", bearer(good))
	for name, tok := range map[string]string{
		"expired":  unsecuredToken(t, map[string]any{"sub": "svc-a", "exp": now.Add(-time.Hour).Unix(), "scope": "kafka"}),
		"no scope": unsecuredToken(t, map[string]any{"sub": "svc-a", "exp": now.Add(time.Hour).Unix()}),
		"no sub":   unsecuredToken(t, map[string]any{"exp": now.Add(time.Hour).Unix(), "scope": "kafka"}),
		"garbage":  "not-a-token",
	} {
		if err := ping(client(t, plainAddr, bearer(tok))); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("unsecured %s: %v", name, err)
		}
	}

	sign := func(k *rsa.PrivateKey, claims jwt.MapClaims) string {
		tk := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
		tk.Header["kid"] = "k1"
		s, err := tk.SignedString(k)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	claims := func(aud string, exp time.Time) jwt.MapClaims {
		return jwt.MapClaims{"sub": "svc-b", "iss": "https://idp.test", "aud": aud, "exp": exp.Unix(), "iat": now.Unix()}
	}
	tlsOpt := kgo.DialTLSConfig(p.noCert)
	roundTrip(t, tlsAddr, "oauth-jwks", tlsOpt, bearer(sign(key, claims("kafka-cluster", now.Add(time.Hour)))))
	for name, tok := range map[string]string{
		"other key":      sign(other, claims("kafka-cluster", now.Add(time.Hour))),
		"wrong audience": sign(key, claims("someone-else", now.Add(time.Hour))),
		"expired":        sign(key, claims("kafka-cluster", now.Add(-time.Hour))),
		"unsigned":       unsecuredToken(t, map[string]any{"sub": "svc-b", "iss": "https://idp.test", "aud": "kafka-cluster", "exp": now.Add(time.Hour).Unix()}),
	} {
		if err := ping(client(t, tlsAddr, tlsOpt, bearer(tok))); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("JWKS %s: %v", name, err)
		}
	}
}

// jwksServer serves a JWKS over https with a certificate of the test CA, and
// counts the fetches.
type jwksServer struct {
	srv     *httptest.Server
	body    atomic.Pointer[[]byte]
	fetches atomic.Int64
}

func newJWKSServer(t *testing.T, p *pki) *jwksServer {
	t.Helper()
	j := &jwksServer{}
	j.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		j.fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(*j.body.Load())
	}))
	pair, err := p.ca.Sign(certgen.Options{CommonName: "idp", Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	j.srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{pair.Cert.Raw}, PrivateKey: pair.Key}}}
	j.srv.StartTLS()
	t.Cleanup(j.srv.Close)
	return j
}

// set publishes the RSA public keys by kid.
func (j *jwksServer) set(t *testing.T, keys map[string]*rsa.PrivateKey) {
	t.Helper()
	b64 := func(n *big.Int) string { return base64.RawURLEncoding.EncodeToString(n.Bytes()) }
	var set []map[string]string
	for kid, k := range keys {
		set = append(set, map[string]string{"kty": "RSA", "kid": kid, "use": "sig", "n": b64(k.N), "e": b64(big.NewInt(int64(k.E)))})
	}
	data, err := json.Marshal(map[string]any{"keys": set})
	if err != nil {
		t.Fatal(err)
	}
	j.body.Store(&data)
}

// TestOAuthBearerJWKSOverHTTPS: the JWKS comes from an https endpoint whose
// certificate the broker verifies with the ssl.truststore.* options of the
// OAUTHBEARER JAAS line (as Kafka's JWKS client does). A token is validated;
// after the identity provider rotates its key, a token of the new kid is
// refused until the broker fetches the JWKS again (on an unknown kid, at most
// every 10 s), then accepted, and a token of the withdrawn key is refused.
// Unknown kids do not make the broker fetch on every attempt.
func TestOAuthBearerJWKSOverHTTPS(t *testing.T) {
	p := newPKI(t)
	k1, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	idp := newJWKSServer(t, p)
	idp.set(t, map[string]*rsa.PrivateKey{"k1": k1})
	b := startSecureBroker(t, p, map[string]string{
		"sasl.enabled.mechanisms":                                   "PLAIN,OAUTHBEARER",
		"listener.name.sasl_ssl.sasl.oauthbearer.jwks.endpoint.url": idp.srv.URL + "/jwks",
		"listener.name.sasl_ssl.sasl.oauthbearer.expected.audience": "kafka-cluster",
		"listener.name.sasl_ssl.oauthbearer.sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ` +
			`ssl.truststore.type="PEM" ssl.truststore.location="` + p.caFile + `";`,
	})
	addr := b.ListenerAddr("SASL_SSL")
	now := time.Now()
	sign := func(k *rsa.PrivateKey, kid string) kgo.Opt {
		tk := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"sub": "svc-" + kid, "aud": "kafka-cluster",
			"exp": now.Add(time.Hour).Unix(), "iat": now.Unix()})
		tk.Header["kid"] = kid
		s, err := tk.SignedString(k)
		if err != nil {
			t.Fatal(err)
		}
		return kgo.SASL(oauth.Auth{Token: s}.AsMechanism())
	}
	tlsOpt := kgo.DialTLSConfig(p.noCert)
	roundTrip(t, addr, "oauth-https", tlsOpt, sign(k1, "k1"))
	if n := idp.fetches.Load(); n != 1 {
		t.Fatalf("%d JWKS fetches for the first token, want 1", n)
	}
	if err := ping(client(t, addr, tlsOpt, sign(k2, "k2"))); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("a kid the JWKS does not hold: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	idp.set(t, map[string]*rsa.PrivateKey{"k2": k2})
	deadline := time.Now().Add(30 * time.Second)
	attempts := 0
	for {
		attempts++
		err := ping(client(t, addr, tlsOpt, sign(k2, "k2")))
		if err == nil {
			break
		}
		if !errors.Is(err, kerr.SaslAuthenticationFailed) || time.Now().After(deadline) {
			t.Fatalf("the rotated key k2 after %d attempts: %v", attempts, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if n := idp.fetches.Load(); n > 3 || int(n) >= attempts {
		t.Fatalf("%d JWKS fetches for %d attempts with an unknown kid: the broker should refetch at most every 10 s", n, attempts)
	}
	if err := ping(client(t, addr, tlsOpt, sign(k1, "k1"))); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("the withdrawn key k1: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}
