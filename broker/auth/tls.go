package auth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/ktoolhq/ktool/broker/config"
	"github.com/ktoolhq/ktool/internal/tlsstore"
)

var tlsVersions = map[string]uint16{"TLSV1.2": tls.VersionTLS12, "TLSV1.3": tls.VersionTLS13}

// applyProtocols sets the versions (ssl.enabled.protocols) and TLS 1.2 cipher
// suites (ssl.cipher.suites, IANA names as Java spells them).
func applyProtocols(s *config.ListenerSecurity, cfg *tls.Config) error {
	for _, p := range s.EnabledProtocols {
		v, ok := tlsVersions[strings.ToUpper(p)]
		if !ok {
			return fmt.Errorf("ssl.enabled.protocols: %q is not supported (TLSv1.2, TLSv1.3)", p)
		}
		if cfg.MinVersion == 0 || v < cfg.MinVersion {
			cfg.MinVersion = v
		}
		if v > cfg.MaxVersion {
			cfg.MaxVersion = v
		}
	}
	if cfg.MinVersion == 0 {
		return errors.New("ssl.enabled.protocols is empty")
	}
	names := s.CipherSuites
	if len(names) == 0 {
		return nil
	}
	known := map[string]uint16{}
	for _, c := range tls.CipherSuites() {
		known[c.Name] = c.ID
	}
	tls13 := false
	for _, n := range names {
		id, ok := known[n]
		switch {
		case strings.HasPrefix(n, "TLS_AES_") || strings.HasPrefix(n, "TLS_CHACHA20_"):
			// Go cannot restrict TLS 1.3 suites: naming any allows all of them.
			tls13 = true
		case ok:
			cfg.CipherSuites = append(cfg.CipherSuites, id)
		default:
			return fmt.Errorf("ssl.cipher.suites: %q is unknown or insecure", n)
		}
	}
	if !tls13 && cfg.MaxVersion == tls.VersionTLS13 {
		// A list without a TLS 1.3 suite leaves TLS 1.3 no suite, as in Kafka;
		// Go would otherwise negotiate TLS 1.3 with a suite off the list.
		if cfg.MinVersion == tls.VersionTLS13 {
			return errors.New("ssl.cipher.suites names no TLS 1.3 suite but ssl.enabled.protocols is TLSv1.3 only")
		}
		cfg.MaxVersion = tls.VersionTLS12
	}
	return nil
}

// ServerTLS builds the TLS configuration of an SSL or SASL_SSL listener. The
// keystore and truststore files are checked for changes at most once a second
// as handshakes arrive, and reloaded when they changed; a reload that fails
// keeps the previous certificates and reports the error through onReloadError.
func ServerTLS(s *config.ListenerSecurity, onReloadError func(error)) (*tls.Config, error) {
	stores := Stores(s)
	build := func() (*tls.Config, error) {
		cert, ok, err := stores.Keystore()
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("TLS needs a keystore (ssl.keystore.location, or ssl.keystore.key and ssl.keystore.certificate.chain)")
		}
		cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
		if err := applyProtocols(s, cfg); err != nil {
			return nil, err
		}
		pool, _, err := stores.Truststore()
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs = pool
		switch strings.ToLower(s.ClientAuth) {
		case "none":
			cfg.ClientAuth = tls.NoClientCert
		case "requested":
			cfg.ClientAuth = tls.VerifyClientCertIfGiven
		case "required":
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
		default:
			return nil, fmt.Errorf("ssl.client.auth %q: want none, requested or required", s.ClientAuth)
		}
		return cfg, nil
	}
	first, err := build()
	if err != nil {
		return nil, err
	}
	r := &reloader{files: stores.Files(), build: build, cur: first, onError: onReloadError}
	r.stamps = r.stat()
	r.checked = time.Now()
	return &tls.Config{
		MinVersion: first.MinVersion,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return r.config(), nil
		},
	}, nil
}

// Stores are the key and trust store settings of a listener.
func Stores(s *config.ListenerSecurity) tlsstore.Stores {
	return tlsstore.Stores{
		KeystoreType: s.KeystoreType, KeystoreLocation: s.KeystoreLocation, KeystorePassword: s.KeystorePassword,
		KeystoreKey: s.KeystoreKey, KeystoreCertificateChain: s.KeystoreCertificateChain,
		TruststoreType: s.TruststoreType, TruststoreLocation: s.TruststoreLocation, TruststorePassword: s.TruststorePassword,
		TruststoreCertificates: s.TruststoreCertificates,
	}
}

type stamp struct {
	mod  time.Time
	size int64
}

// reloader rebuilds a TLS configuration when its files change.
type reloader struct {
	files   []string
	build   func() (*tls.Config, error)
	onError func(error)

	mu      sync.Mutex
	cur     *tls.Config
	stamps  []stamp
	checked time.Time
}

func (r *reloader) stat() []stamp {
	out := make([]stamp, len(r.files))
	for i, f := range r.files {
		if st, err := os.Stat(f); err == nil {
			out[i] = stamp{st.ModTime(), st.Size()}
		}
	}
	return out
}

func (r *reloader) config() *tls.Config {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.files) == 0 || time.Since(r.checked) < time.Second {
		return r.cur
	}
	r.checked = time.Now()
	now := r.stat()
	changed := false
	for i := range now {
		if now[i] != r.stamps[i] {
			changed = true
		}
	}
	if !changed {
		return r.cur
	}
	r.stamps = now
	cfg, err := r.build()
	if err != nil {
		if r.onError != nil {
			r.onError(err)
		}
		return r.cur
	}
	r.cur = cfg
	return cfg
}

// ClientTLS builds the TLS configuration a broker uses to reach another
// broker's listener: the truststore verifies it (the system roots when none
// is set), the keystore, when set, is the broker's client certificate, and
// ssl.endpoint.identification.algorithm=https (Kafka's default) checks the host
// name; an empty value checks only the chain.
func ClientTLS(s *config.ListenerSecurity) (*tls.Config, error) {
	cfg := &tls.Config{}
	if err := applyProtocols(s, cfg); err != nil {
		return nil, err
	}
	stores := Stores(s)
	cert, ok, err := stores.Keystore()
	if err != nil {
		return nil, err
	}
	if ok {
		cfg.Certificates = []tls.Certificate{cert}
	}
	pool, _, err := stores.Truststore()
	if err != nil {
		return nil, err
	}
	cfg.RootCAs = pool
	if strings.EqualFold(s.EndpointIdentification, "https") {
		return cfg, nil
	}
	cfg.InsecureSkipVerify = true // the chain is still verified below, only the name is not
	cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
		return tlsstore.VerifyChain(raw, pool)
	}
	return cfg, nil
}
