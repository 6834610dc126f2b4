package auth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestJWKSFetchBackoff: while the JWKS endpoint fails, tokens are refused
// without a fetch per token (one per jwksRetry at most); once it answers, the
// next fetch after the backoff lets tokens through.
func TestJWKSFetchBackoff(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b64 := func(n *big.Int) string { return base64.RawURLEncoding.EncodeToString(n.Bytes()) }
	jwks, err := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "kid": "k1", "n": b64(key.N), "e": b64(big.NewInt(int64(key.E)))}}})
	if err != nil {
		t.Fatal(err)
	}
	var up atomic.Bool
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		if !up.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write(jwks)
	}))
	defer srv.Close()
	v := &jwksValidator{url: srv.URL, subClaim: "sub", client: srv.Client()}
	tk := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"sub": "svc", "exp": time.Now().Add(time.Hour).Unix()})
	tk.Header["kid"] = "k1"
	token, err := tk.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	start := time.Now()
	const tries = 50
	for range tries {
		if _, err := v.validate(ctx, token); err == nil {
			t.Fatal("a token was accepted while the JWKS endpoint fails")
		}
	}
	if n, most := hits.Load(), 1+int64(time.Since(start)/jwksRetry); n > most {
		t.Fatalf("%d fetches for %d tokens in %v while the endpoint fails, want at most %d", n, tries, time.Since(start), most)
	}
	up.Store(true)
	deadline := time.Now().Add(10 * jwksRetry)
	for {
		sub, err := v.validate(ctx, token)
		if err == nil && sub == "svc" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the endpoint answers again, but the token is still refused: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
