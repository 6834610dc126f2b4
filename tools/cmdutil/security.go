package cmdutil

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"github.com/AlecAivazis/survey/v2"
	"github.com/AlecAivazis/survey/v2/terminal"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/ktoolhq/ktool/broker/config"
	"github.com/ktoolhq/ktool/internal/jaas"
	"github.com/ktoolhq/ktool/internal/tlsstore"
)

// PasswordEnv is the environment variable holding the SASL password.
const PasswordEnv = "KTOOL_SASL_PASSWORD"

// Security is how ktool connects to a secured cluster: TLS and SASL, from the
// flags, a client.properties (--client-config) and the profile, in that order
// of precedence.
type Security struct {
	TLS           bool   `json:"tls,omitempty" yaml:"tls,omitempty"`
	TLSCA         string `json:"tls_ca,omitempty" yaml:"tls_ca,omitempty"`
	TLSCert       string `json:"tls_cert,omitempty" yaml:"tls_cert,omitempty"`
	TLSKey        string `json:"tls_key,omitempty" yaml:"tls_key,omitempty"`
	TLSServerName string `json:"tls_server_name,omitempty" yaml:"tls_server_name,omitempty"`
	SASLMechanism string `json:"sasl_mechanism,omitempty" yaml:"sasl_mechanism,omitempty"`
	SASLUser      string `json:"sasl_user,omitempty" yaml:"sasl_user,omitempty"`
	// SASLPasswordFile holds the password (first line); profiles never hold
	// the password itself.
	SASLPasswordFile string `json:"sasl_password_file,omitempty" yaml:"sasl_password_file,omitempty"`
	// ClientConfig is a Kafka client.properties to read.
	ClientConfig string `json:"client_config,omitempty" yaml:"client_config,omitempty"`

	// From a client.properties: key and trust stores, the password of its JAAS line.
	stores       tlsstore.Stores
	password     string
	skipHostname bool
}

// addSecurityFlags registers the TLS and SASL flags on the root command.
func (f *Factory) addSecurityFlags(root *cobra.Command) {
	pf := root.PersistentFlags()
	s := &f.SecurityFlags
	pf.BoolVar(&s.TLS, "tls", false, "connect with TLS (implied by the other --tls-* flags)")
	pf.StringVar(&s.TLSCA, "tls-ca", "", "PEM file of the CA certificates that sign the brokers' certificates (default: the system roots)")
	pf.StringVar(&s.TLSCert, "tls-cert", "", "PEM client certificate for mutual TLS")
	pf.StringVar(&s.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	pf.StringVar(&s.TLSServerName, "tls-server-name", "", "host name the brokers' certificates must name (default: the host dialed)")
	pf.StringVar(&s.SASLMechanism, "sasl-mechanism", "", "SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	pf.StringVar(&s.SASLUser, "sasl-user", "", "SASL user; the password comes from --sasl-password-file, env "+PasswordEnv+", or a prompt")
	pf.StringVar(&s.SASLPasswordFile, "sasl-password-file", "", "file whose first line is the SASL password")
	pf.StringVar(&s.ClientConfig, "client-config", "", "Kafka client.properties to connect with (security.protocol, sasl.mechanism, sasl.jaas.config, ssl.truststore.*, ssl.keystore.*)")
}

// ReadClientConfig reads the security settings of a Kafka client.properties.
func ReadClientConfig(path string) (Security, error) {
	props, err := config.ReadPropertiesFile(path)
	if err != nil {
		return Security{}, err
	}
	var s Security
	proto := strings.ToUpper(props["security.protocol"])
	switch proto {
	case "", "PLAINTEXT":
	case "SSL", "SASL_SSL":
		s.TLS = true
	case "SASL_PLAINTEXT":
	default:
		return Security{}, fmt.Errorf("%s: security.protocol %q is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", path, props["security.protocol"])
	}
	s.stores = tlsstore.Stores{
		KeystoreType: props["ssl.keystore.type"], KeystoreLocation: props["ssl.keystore.location"],
		KeystorePassword: props["ssl.keystore.password"], KeystoreKey: props["ssl.keystore.key"],
		KeystoreCertificateChain: props["ssl.keystore.certificate.chain"],
		TruststoreType:           props["ssl.truststore.type"], TruststoreLocation: props["ssl.truststore.location"],
		TruststorePassword: props["ssl.truststore.password"], TruststoreCertificates: props["ssl.truststore.certificates"],
	}
	if v, ok := props["ssl.endpoint.identification.algorithm"]; ok && v == "" {
		s.skipHostname = true
	}
	if strings.HasPrefix(proto, "SASL_") {
		s.SASLMechanism = strings.ToUpper(props["sasl.mechanism"])
		if s.SASLMechanism == "" {
			s.SASLMechanism = "GSSAPI" // Kafka's default, refused below with a clear message
		}
		if j := props["sasl.jaas.config"]; j != "" {
			e, err := jaas.Parse(j)
			if err != nil {
				return Security{}, fmt.Errorf("%s: %w", path, err)
			}
			s.SASLUser, s.password = e.Options["username"], e.Options["password"]
		}
	}
	return s, nil
}

// merge fills what s leaves empty from o.
func (s Security) merge(o Security) Security {
	if !s.TLS {
		s.TLS = o.TLS
	}
	for _, p := range []struct{ dst, src *string }{
		{&s.TLSCA, &o.TLSCA}, {&s.TLSCert, &o.TLSCert}, {&s.TLSKey, &o.TLSKey}, {&s.TLSServerName, &o.TLSServerName},
		{&s.SASLMechanism, &o.SASLMechanism}, {&s.SASLUser, &o.SASLUser}, {&s.SASLPasswordFile, &o.SASLPasswordFile},
		{&s.password, &o.password},
	} {
		if *p.dst == "" {
			*p.dst = *p.src
		}
	}
	if s.stores == (tlsstore.Stores{}) {
		s.stores = o.stores
	}
	s.skipHostname = s.skipHostname || o.skipHostname
	return s
}

// Security resolves the security settings: flags, then --client-config (or the
// profile's client_config), then the profile.
func (f *Factory) Security() (Security, error) {
	s := f.SecurityFlags
	p, _, err := f.Profile()
	if err != nil {
		return Security{}, err
	}
	var prof Security
	if p != nil && p.Security != nil {
		prof = *p.Security
	}
	path := s.ClientConfig
	if path == "" {
		path = prof.ClientConfig
	}
	if path != "" {
		cc, err := ReadClientConfig(path)
		if err != nil {
			return Security{}, Usagef("--client-config: %v", err)
		}
		s = s.merge(cc)
	}
	return s.merge(prof), nil
}

// tlsConfig builds the client TLS configuration, nil when TLS is off.
func (s Security) tlsConfig() (*tls.Config, error) {
	if !s.TLS && s.TLSCA == "" && s.TLSCert == "" && s.TLSKey == "" && s.TLSServerName == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.TLSServerName}
	pool, ok, err := s.stores.Truststore()
	if err != nil {
		return nil, err
	}
	if s.TLSCA != "" {
		data, err := os.ReadFile(s.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		pool, ok = x509.NewCertPool(), true
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("--tls-ca %s holds no PEM certificate", s.TLSCA)
		}
	}
	if ok {
		cfg.RootCAs = pool
	}
	switch {
	case s.TLSCert != "" || s.TLSKey != "":
		if s.TLSCert == "" || s.TLSKey == "" {
			return nil, Usagef("--tls-cert and --tls-key go together")
		}
		cert, err := tls.LoadX509KeyPair(s.TLSCert, s.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	default:
		cert, ok, err := s.stores.Keystore()
		if err != nil {
			return nil, err
		}
		if ok {
			cfg.Certificates = []tls.Certificate{cert}
		}
	}
	if s.skipHostname && cfg.ServerName == "" {
		// ssl.endpoint.identification.algorithm= : check the chain, not the name.
		roots := cfg.RootCAs
		cfg.InsecureSkipVerify = true
		cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			return tlsstore.VerifyChain(raw, roots)
		}
	}
	return cfg, nil
}

// saslMechanism builds the SASL mechanism, nil when SASL is off. The password
// comes from the client.properties, --sasl-password-file, KTOOL_SASL_PASSWORD
// or, on a terminal, a prompt; never from a flag (ps would show it).
func (f *Factory) saslMechanism(s Security) (sasl.Mechanism, error) {
	if s.SASLMechanism == "" && s.SASLUser == "" {
		return nil, nil
	}
	mech := strings.ToUpper(s.SASLMechanism)
	if mech == "" {
		mech = "SCRAM-SHA-512"
	}
	if s.SASLUser == "" {
		return nil, Usagef("--sasl-mechanism %s needs --sasl-user (or a client.properties with sasl.jaas.config)", mech)
	}
	pass, err := f.password(s)
	if err != nil {
		return nil, err
	}
	switch mech {
	case "PLAIN":
		return plain.Auth{User: s.SASLUser, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: s.SASLUser, Pass: pass}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: s.SASLUser, Pass: pass}.AsSha512Mechanism(), nil
	}
	return nil, Usagef("SASL mechanism %s is not supported by ktool (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", mech)
}

func (f *Factory) password(s Security) (string, error) {
	if s.password != "" {
		return s.password, nil
	}
	if s.SASLPasswordFile != "" {
		return ReadSecretFile(s.SASLPasswordFile)
	}
	if v, ok := os.LookupEnv(PasswordEnv); ok {
		return v, nil
	}
	if f.cachedPassword != "" {
		return f.cachedPassword, nil
	}
	if !f.IO.CanPrompt() {
		return "", Usagef("no SASL password for %s: use --sasl-password-file, %s, or a client.properties", s.SASLUser, PasswordEnv)
	}
	in, ok := f.IO.In.(terminal.FileReader)
	out, ok2 := f.IO.Out.(terminal.FileWriter)
	if !ok || !ok2 {
		return "", Usagef("no SASL password for %s: use --sasl-password-file or %s", s.SASLUser, PasswordEnv)
	}
	var pass string
	if err := survey.AskOne(&survey.Password{Message: "SASL password for " + s.SASLUser + ":"}, &pass,
		survey.WithStdio(in, out, f.IO.ErrOut)); err != nil {
		return "", err
	}
	f.cachedPassword = pass
	return pass, nil
}

// ReadSecretFile returns the first line of a file holding a secret.
func ReadSecretFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return strings.TrimRight(line, "\r"), nil
}

// securityOpts are the kgo options for TLS and SASL of the resolved settings.
func (f *Factory) securityOpts() ([]kgo.Opt, error) {
	s, err := f.Security()
	if err != nil {
		return nil, err
	}
	return f.SecurityOpts(s)
}

// SecurityOpts are the kgo options for TLS and SASL of s alone (commands that
// know the cluster's security themselves, such as ktool cluster).
func (f *Factory) SecurityOpts(s Security) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	cfg, err := s.tlsConfig()
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	m, err := f.saslMechanism(s)
	if err != nil {
		return nil, err
	}
	if m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}
