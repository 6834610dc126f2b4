package broker_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
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
