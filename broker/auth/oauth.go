package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/ktoolhq/ktool/broker/config"
	"github.com/ktoolhq/ktool/internal/jaas"
)

// OAuthBearer is the SASL mechanism of KIP-255 (RFC 7628).
const OAuthBearer = "OAUTHBEARER"

// maxToken bounds a bearer token (Kafka's frames before authentication are
// bounded too; a JWT is a few KB).
const maxToken = 64 << 10

// oauthValidator checks a bearer token and names its principal.
type oauthValidator interface {
	validate(ctx context.Context, token string) (principal string, err error)
}

// newOAuthValidator picks KIP-768's JWT validation against a JWKS when
// sasl.oauthbearer.jwks.endpoint.url is set, else KIP-255's unsecured tokens
// (alg none, for development) configured by the JAAS options
// unsecuredValidator*.
func newOAuthValidator(s *config.ListenerSecurity) (oauthValidator, error) {
	if s.OAuthJWKSURL != "" {
		client := &http.Client{Timeout: 10 * time.Second}
		if strings.HasPrefix(strings.ToLower(s.OAuthJWKSURL), "https://") {
			cfg, err := jwksTLS(s)
			if err != nil {
				return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url: %w", err)
			}
			client.Transport = &http.Transport{TLSClientConfig: cfg, Proxy: http.ProxyFromEnvironment}
		}
		return &jwksValidator{
			url: s.OAuthJWKSURL, refresh: s.OAuthJWKSRefresh, audience: s.OAuthExpectedAudience,
			issuer: s.OAuthExpectedIssuer, subClaim: or(s.OAuthSubClaim, "sub"), skew: s.OAuthClockSkew,
			client: client,
		}, nil
	}
	v := &unsecuredValidator{principalClaim: "sub", scopeClaim: "scope"}
	if j := s.JAAS(OAuthBearer); j != "" {
		e, err := jaas.Parse(j)
		if err != nil {
			return nil, err
		}
		o := e.Options
		v.principalClaim = or(o["unsecuredValidatorPrincipalClaimName"], "sub")
		v.scopeClaim = or(o["unsecuredValidatorScopeClaimName"], "scope")
		for _, sc := range strings.Fields(strings.ReplaceAll(o["unsecuredValidatorRequiredScope"], ",", " ")) {
			v.required = append(v.required, sc)
		}
		if ms := o["unsecuredValidatorAllowableClockSkewMs"]; ms != "" {
			d, err := time.ParseDuration(ms + "ms")
			if err != nil || d < 0 {
				return nil, fmt.Errorf("unsecuredValidatorAllowableClockSkewMs %q is not a number of milliseconds", ms)
			}
			v.skew = d
		}
	}
	return v, nil
}

// jwksTLS is the TLS configuration for an https JWKS endpoint. As Kafka's
// JWKS client does, it reads the ssl.* options of the listener's OAUTHBEARER
// JAAS line (ssl.truststore.*, ssl.keystore.*, ssl.enabled.protocols,
// ssl.endpoint.identification.algorithm); without a truststore the system
// roots verify the endpoint.
func jwksTLS(s *config.ListenerSecurity) (*tls.Config, error) {
	ls := &config.ListenerSecurity{EnabledProtocols: []string{"TLSv1.2", "TLSv1.3"}, EndpointIdentification: "https"}
	if j := s.JAAS(OAuthBearer); j != "" {
		e, err := jaas.Parse(j)
		if err != nil {
			return nil, err
		}
		for key, dst := range map[string]*string{
			"ssl.keystore.type": &ls.KeystoreType, "ssl.keystore.location": &ls.KeystoreLocation,
			"ssl.keystore.password": &ls.KeystorePassword, "ssl.keystore.key": &ls.KeystoreKey,
			"ssl.keystore.certificate.chain": &ls.KeystoreCertificateChain,
			"ssl.truststore.type":            &ls.TruststoreType, "ssl.truststore.location": &ls.TruststoreLocation,
			"ssl.truststore.password": &ls.TruststorePassword, "ssl.truststore.certificates": &ls.TruststoreCertificates,
			"ssl.endpoint.identification.algorithm": &ls.EndpointIdentification,
		} {
			if v, ok := e.Options[key]; ok {
				*dst = v
			}
		}
		if v, ok := e.Options["ssl.enabled.protocols"]; ok {
			ls.EnabledProtocols = strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' })
		}
	}
	return ClientTLS(ls)
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// oauthExchange is the server side of OAUTHBEARER: the client's initial
// response "n,[a=authzid],\x01auth=Bearer <token>\x01...\x01\x01"; a bad token
// is answered, as Kafka does, with an error status the client acknowledges
// with a single \x01, after which authentication fails.
type oauthExchange struct {
	v         oauthValidator
	principal string
	failed    error
}

func (x *oauthExchange) Step(ctx context.Context, msg []byte) ([]byte, bool, error) {
	if x.failed != nil {
		return nil, false, x.failed
	}
	token, authz, err := parseOAuthMessage(msg)
	if err == nil {
		x.principal, err = x.v.validate(ctx, token)
	}
	if err == nil && authz != "" && authz != x.principal {
		err = fmt.Errorf("authorization id %q differs from the token's principal %q", authz, x.principal)
	}
	if err != nil {
		x.failed = fmt.Errorf("OAUTHBEARER: %w", err)
		return []byte(`{"status":"invalid_token"}`), false, nil
	}
	return nil, true, nil
}

func (x *oauthExchange) Principal() Principal { return User(x.principal) }

func parseOAuthMessage(msg []byte) (token, authz string, err error) {
	if len(msg) > maxToken {
		return "", "", errors.New("message too large")
	}
	s := string(msg)
	gs2, rest, ok := strings.Cut(s, "\x01")
	if !ok {
		return "", "", errors.New("no key-value separator")
	}
	parts := strings.Split(gs2, ",")
	if len(parts) != 3 || parts[0] != "n" || parts[2] != "" {
		return "", "", errors.New("bad gs2 header")
	}
	if parts[1] != "" {
		a, ok := strings.CutPrefix(parts[1], "a=")
		if !ok {
			return "", "", errors.New("bad authorization id")
		}
		if authz, ok = saslName(a); !ok {
			return "", "", errors.New("bad authorization id encoding")
		}
	}
	if !strings.HasSuffix(rest, "\x01\x01") && rest != "\x01" {
		return "", "", errors.New("message does not end with two separators")
	}
	for _, kv := range strings.Split(strings.TrimSuffix(rest, "\x01"), "\x01") {
		k, v, _ := strings.Cut(kv, "=")
		if k == "auth" {
			scheme, tok, ok := strings.Cut(v, " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
				return "", "", errors.New("auth is not a Bearer token")
			}
			token = strings.TrimSpace(tok)
		}
	}
	if token == "" {
		return "", "", errors.New("no token")
	}
	return token, authz, nil
}

// unsecuredValidator accepts KIP-255's unsecured JWS (alg "none"), checking
// expiry, issue time, the principal claim and required scopes.
type unsecuredValidator struct {
	principalClaim, scopeClaim string
	required                   []string
	skew                       time.Duration
}

func (u *unsecuredValidator) validate(_ context.Context, token string) (string, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[2] != "" {
		return "", errors.New("an unsecured token is header.claims. with an empty signature")
	}
	var header struct {
		Alg string `json:"alg"`
	}
	if err := decodeSegment(parts[0], &header); err != nil {
		return "", fmt.Errorf("token header: %w", err)
	}
	if header.Alg != "none" {
		return "", fmt.Errorf("alg %q: unsecured tokens have alg none (set sasl.oauthbearer.jwks.endpoint.url to validate signed ones)", header.Alg)
	}
	var claims map[string]any
	if err := decodeSegment(parts[1], &claims); err != nil {
		return "", fmt.Errorf("token claims: %w", err)
	}
	now := time.Now()
	exp, ok := claims["exp"].(float64)
	if !ok {
		return "", errors.New("no numeric exp claim")
	}
	if now.After(time.UnixMilli(int64(exp * 1000)).Add(u.skew)) {
		return "", errors.New("the token has expired")
	}
	if iat, ok := claims["iat"]; ok {
		f, ok := iat.(float64)
		if !ok {
			return "", errors.New("iat is not a number")
		}
		if time.UnixMilli(int64(f * 1000)).After(now.Add(u.skew)) {
			return "", errors.New("the token was issued in the future")
		}
	}
	sub, ok := claims[u.principalClaim].(string)
	if !ok || strings.TrimSpace(sub) == "" {
		return "", fmt.Errorf("no %s claim naming the principal", u.principalClaim)
	}
	if err := checkScopes(claims[u.scopeClaim], u.required); err != nil {
		return "", err
	}
	return sub, nil
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(seg, "="))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// checkScopes checks that the scope claim (a space-separated string or a list)
// holds every required scope.
func checkScopes(claim any, required []string) error {
	var have []string
	switch c := claim.(type) {
	case string:
		have = strings.Fields(c)
	case []any:
		for _, s := range c {
			if str, ok := s.(string); ok {
				have = append(have, str)
			}
		}
	}
	for _, r := range required {
		if !slices.Contains(have, r) {
			return fmt.Errorf("the token lacks the required scope %q", r)
		}
	}
	return nil
}

// jwksValidator checks signed JWTs against the keys of a JWKS (an https URL,
// or a file: URL or path), as KIP-768's OAuthBearerValidatorCallbackHandler.
type jwksValidator struct {
	url      string
	refresh  time.Duration
	audience []string
	issuer   string
	subClaim string
	skew     time.Duration
	client   *http.Client

	mu        sync.Mutex
	keys      map[string]any // by kid
	fetched   time.Time      // the last successful fetch
	attempted time.Time      // the last fetch, successful or not
	lastErr   error          // of the last fetch
}

// Fetches of the JWKS are bounded so that clients, authenticated or not, cannot
// make the broker call the endpoint at their pace: after a failed fetch the next
// waits jwksRetry, and a kid the JWKS lacks triggers one at most every
// unknownKidRefetch.
const (
	jwksRetry         = time.Second
	unknownKidRefetch = 10 * time.Second
)

var jwtMethods = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"}

func (j *jwksValidator) validate(ctx context.Context, token string) (string, error) {
	opts := []jwt.ParserOption{jwt.WithValidMethods(jwtMethods), jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithLeeway(j.skew)}
	if j.issuer != "" {
		opts = append(opts, jwt.WithIssuer(j.issuer))
	}
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		return j.key(ctx, kid)
	}, opts...)
	if err != nil {
		return "", err
	}
	if len(j.audience) > 0 {
		aud, err := claims.GetAudience()
		if err != nil {
			return "", err
		}
		if !slices.ContainsFunc(aud, func(a string) bool { return slices.Contains(j.audience, a) }) {
			return "", fmt.Errorf("the token's audience %v is not one of %v", []string(aud), j.audience)
		}
	}
	sub, ok := claims[j.subClaim].(string)
	if !ok || strings.TrimSpace(sub) == "" {
		return "", fmt.Errorf("no %s claim naming the principal", j.subClaim)
	}
	return sub, nil
}

// key returns the key of kid, fetching the JWKS when it is older than the
// refresh interval or when kid is unknown, within the bounds above; a failed
// fetch keeps the keys fetched before.
func (j *jwksValidator) key(ctx context.Context, kid string) (any, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	refresh := j.refresh
	if refresh <= 0 {
		refresh = time.Hour
	}
	k, ok := j.keys[kid]
	since := time.Since(j.attempted)
	if time.Since(j.fetched) > refresh && since > jwksRetry || !ok && since > unknownKidRefetch {
		j.attempted = time.Now()
		keys, err := j.fetch(ctx)
		j.lastErr = err
		if err == nil {
			j.keys, j.fetched = keys, j.attempted
		}
		k, ok = j.keys[kid]
	}
	if !ok {
		if j.keys == nil && j.lastErr != nil {
			return nil, j.lastErr
		}
		return nil, fmt.Errorf("no key %q in the JWKS at %s", kid, j.url)
	}
	return k, nil
}

func (j *jwksValidator) fetch(ctx context.Context) (map[string]any, error) {
	var data []byte
	var err error
	if path, ok := strings.CutPrefix(j.url, "file:"); ok || !strings.Contains(j.url, "://") {
		if !ok {
			path = j.url
		}
		data, err = os.ReadFile(strings.TrimPrefix(path, "//"))
	} else {
		var req *http.Request
		if req, err = http.NewRequestWithContext(ctx, http.MethodGet, j.url, nil); err == nil {
			var resp *http.Response
			if resp, err = j.client.Do(req); err == nil {
				defer resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("JWKS endpoint %s answered %s", j.url, resp.Status)
				} else {
					data, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
				}
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("reading the JWKS: %w", err)
	}
	return parseJWKS(data)
}

// parseJWKS reads the RSA and EC public keys of a JSON Web Key Set (RFC 7517).
func parseJWKS(data []byte) (map[string]any, error) {
	var set struct {
		Keys []struct {
			Kty, Kid, Use, Crv, N, E, X, Y string
		} `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("JWKS: %w", err)
	}
	b64 := func(s string) (*big.Int, error) {
		b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
		if err != nil || len(b) == 0 {
			return nil, errors.New("bad base64url number")
		}
		return new(big.Int).SetBytes(b), nil
	}
	out := map[string]any{}
	for _, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		switch k.Kty {
		case "RSA":
			n, err := b64(k.N)
			if err != nil {
				return nil, fmt.Errorf("JWKS key %q: n: %w", k.Kid, err)
			}
			e, err := b64(k.E)
			if err != nil || !e.IsInt64() || e.Int64() < 3 || e.Int64() > 1<<31 {
				return nil, fmt.Errorf("JWKS key %q: bad e", k.Kid)
			}
			if n.BitLen() < 2048 {
				return nil, fmt.Errorf("JWKS key %q: RSA keys below 2048 bits are refused", k.Kid)
			}
			out[k.Kid] = &rsa.PublicKey{N: n, E: int(e.Int64())}
		case "EC":
			var curve elliptic.Curve
			switch k.Crv {
			case "P-256":
				curve = elliptic.P256()
			case "P-384":
				curve = elliptic.P384()
			case "P-521":
				curve = elliptic.P521()
			default:
				return nil, fmt.Errorf("JWKS key %q: curve %q is not supported", k.Kid, k.Crv)
			}
			x, err := b64(k.X)
			if err != nil {
				return nil, fmt.Errorf("JWKS key %q: x: %w", k.Kid, err)
			}
			y, err := b64(k.Y)
			if err != nil {
				return nil, fmt.Errorf("JWKS key %q: y: %w", k.Kid, err)
			}
			pub := &ecdsa.PublicKey{Curve: curve, X: x, Y: y}
			if _, err := pub.ECDH(); err != nil {
				return nil, fmt.Errorf("JWKS key %q: %w", k.Kid, err)
			}
			out[k.Kid] = pub
		}
	}
	if len(out) == 0 {
		return nil, errors.New("the JWKS holds no RSA or EC signing key")
	}
	return out, nil
}
