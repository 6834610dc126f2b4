package ui

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
)

const (
	sessionCookie = "ktool_ui_session"
	csrfHeader    = "X-Ktool-Csrf"
	// maxActionBody bounds the JSON body of an action.
	maxActionBody = 64 << 10
)

// Auth is the optional access control of the console: a bearer token (also
// accepted as the password of HTTP basic auth, so a browser can log in), and/or
// a basic-auth user and password.
type Auth struct {
	Token    string
	User     string
	Password string
}

// Enabled reports whether any credential is required.
func (a Auth) Enabled() bool { return a.Token != "" || a.User != "" }

// ReadTokenFile reads a bearer token: the file's first line, at least 16 bytes.
func ReadTokenFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading --auth-token-file: %w", err)
	}
	tok, _, _ := strings.Cut(string(b), "\n")
	tok = strings.TrimSpace(tok)
	if len(tok) < 16 {
		return "", fmt.Errorf("the token in %s is shorter than 16 characters", path)
	}
	return tok, nil
}

// ReadBasicAuthFile reads "user:password" from the file's first line.
func ReadBasicAuthFile(path string) (user, password string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("reading --basic-auth-file: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	user, password, ok := strings.Cut(strings.TrimSpace(line), ":")
	if !ok || user == "" || len(password) < 8 {
		return "", "", fmt.Errorf("%s must hold user:password with a password of at least 8 characters", path)
	}
	return user, password, nil
}

func eq(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

func (a Auth) allows(r *http.Request) bool {
	if !a.Enabled() {
		return true
	}
	h := r.Header.Get("Authorization")
	if tok, ok := strings.CutPrefix(h, "Bearer "); ok && a.Token != "" {
		return eq(tok, a.Token)
	}
	user, pass, ok := r.BasicAuth()
	if !ok {
		return false
	}
	if a.Token != "" && eq(pass, a.Token) {
		return true
	}
	return a.User != "" && eq(user, a.User) && eq(pass, a.Password)
}

// guard holds the per-process secret that binds CSRF tokens to sessions, and
// the host names a loopback console answers to.
type guard struct {
	auth         Auth
	key          []byte
	loopbackOnly bool
}

func newGuard(auth Auth, listen string) (*guard, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: %w", listen, err)
	}
	ip := net.ParseIP(host)
	return &guard{auth: auth, key: key, loopbackOnly: host == "localhost" || (ip != nil && ip.IsLoopback())}, nil
}

// csrfToken is the token pages must send with every action of this session.
func (g *guard) csrfToken(session string) string {
	m := hmac.New(sha256.New, g.key)
	m.Write([]byte(session))
	return hex.EncodeToString(m.Sum(nil))
}

// session returns the request's session id, creating one (and its cookie) when
// the browser has none.
func (g *guard) session(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(sessionCookie); err == nil && len(c.Value) == 32 {
		if _, err := hex.DecodeString(c.Value); err == nil {
			return c.Value
		}
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	return id
}

// hostAllowed refuses requests whose Host is not a loopback name when the
// console listens on loopback: a page on another site that rebinds its DNS
// name to 127.0.0.1 must not reach it.
func (g *guard) hostAllowed(r *http.Request) bool {
	if !g.loopbackOnly {
		return true
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkAction enforces what every state-changing request must carry: a
// same-origin Origin (or Referer), a JSON body, and the session's CSRF token.
func (g *guard) checkAction(r *http.Request) error {
	origin := r.Header.Get("Origin")
	if origin == "" {
		origin = r.Header.Get("Referer")
	}
	u, err := url.Parse(origin)
	if origin == "" || err != nil || u.Host != r.Host {
		return fmt.Errorf("cross-origin or origin-less request refused")
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("actions take application/json")
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return fmt.Errorf("no session: reload the page")
	}
	if !eq(r.Header.Get(csrfHeader), g.csrfToken(c.Value)) {
		return fmt.Errorf("bad or missing CSRF token: reload the page")
	}
	return nil
}

// wrap applies authentication, the Host check and the security headers to
// every response.
func (g *guard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		if !g.hostAllowed(r) {
			http.Error(w, "unexpected Host header", http.StatusMisdirectedRequest)
			return
		}
		if !g.auth.allows(r) {
			h.Set("WWW-Authenticate", `Basic realm="ktool ui", charset="UTF-8"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
