package config

import (
	"fmt"
	"reflect"
	"strings"
	"time"
)

// ListenerSecurity is the TLS and SASL configuration of one listener. Kafka
// lets each setting be given for a single listener as
// listener.name.<listener lower case>.<setting>; the broker-wide setting
// applies otherwise.
type ListenerSecurity struct {
	SASLEnabledMechanisms []string `config:"sasl.enabled.mechanisms"`
	SASLJAASConfig        string   `config:"sasl.jaas.config"`

	KeystoreType             string   `config:"ssl.keystore.type"`
	KeystoreLocation         string   `config:"ssl.keystore.location"`
	KeystorePassword         string   `config:"ssl.keystore.password"`
	KeyPassword              string   `config:"ssl.key.password"`
	KeystoreKey              string   `config:"ssl.keystore.key"`
	KeystoreCertificateChain string   `config:"ssl.keystore.certificate.chain"`
	TruststoreType           string   `config:"ssl.truststore.type"`
	TruststoreLocation       string   `config:"ssl.truststore.location"`
	TruststorePassword       string   `config:"ssl.truststore.password"`
	TruststoreCertificates   string   `config:"ssl.truststore.certificates"`
	ClientAuth               string   `config:"ssl.client.auth"`
	EnabledProtocols         []string `config:"ssl.enabled.protocols"`
	CipherSuites             []string `config:"ssl.cipher.suites"`
	PrincipalMappingRules    string   `config:"ssl.principal.mapping.rules"`
	EndpointIdentification   string   `config:"ssl.endpoint.identification.algorithm"`

	OAuthJWKSURL          string        `config:"sasl.oauthbearer.jwks.endpoint.url"`
	OAuthJWKSRefresh      time.Duration `config:"sasl.oauthbearer.jwks.endpoint.refresh.ms"`
	OAuthExpectedAudience []string      `config:"sasl.oauthbearer.expected.audience"`
	OAuthExpectedIssuer   string        `config:"sasl.oauthbearer.expected.issuer"`
	OAuthSubClaim         string        `config:"sasl.oauthbearer.sub.claim.name"`
	OAuthClockSkew        time.Duration `config:"sasl.oauthbearer.clock.skew.seconds"`

	// jaas holds sasl.jaas.config per mechanism
	// (listener.name.<l>.<mechanism>.sasl.jaas.config), upper-case keys.
	jaas map[string]string
}

// JAAS is the sasl.jaas.config of a mechanism on this listener: Kafka's
// listener.name.<l>.<mechanism>.sasl.jaas.config, else the listener's or the
// broker's sasl.jaas.config.
func (s *ListenerSecurity) JAAS(mechanism string) string {
	if v, ok := s.jaas[strings.ToUpper(mechanism)]; ok {
		return v
	}
	return s.SASLJAASConfig
}

// Listener resolves the security settings of a listener, checking its
// per-listener overrides as NewBroker checked the broker-wide settings.
func (b *Broker) Listener(name string) (*ListenerSecurity, error) {
	prefix := "listener.name." + strings.ToLower(name) + "."
	s := &ListenerSecurity{jaas: map[string]string{}}
	overrides := map[string]string{}
	for k, v := range b.static {
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		if mech, ok := strings.CutSuffix(rest, ".sasl.jaas.config"); ok && mech != "" {
			s.jaas[strings.ToUpper(mech)] = v
			continue
		}
		if d, ok := LookupBroker(rest); ok {
			if err := d.Check(v); err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
		}
		overrides[rest] = v
	}
	get := func(key string) Value {
		if v, ok := overrides[key]; ok {
			return Value{Name: prefix + key, Value: v, Source: SourceStaticBroker}
		}
		return b.Get(key)
	}
	if err := decode(s, BrokerDefs, get, false); err != nil {
		return nil, err
	}
	return s, nil
}

// isListenerSetting reports whether k is a per-listener override Broker.Listener
// reads: listener.name.<l>.<security setting>, or
// listener.name.<l>.<mechanism>.sasl.jaas.config.
func isListenerSetting(k string) bool {
	rest, ok := strings.CutPrefix(k, "listener.name.")
	if !ok {
		return false
	}
	_, setting, ok := strings.Cut(rest, ".")
	if !ok {
		return false
	}
	if _, ok := strings.CutSuffix(setting, ".sasl.jaas.config"); ok {
		return true
	}
	for _, name := range listenerSecurityNames() {
		if setting == name {
			return true
		}
	}
	return false
}

// listenerSecurityNames are the settings ListenerSecurity reads.
func listenerSecurityNames() []string {
	var out []string
	t := reflect.TypeFor[ListenerSecurity]()
	for i := range t.NumField() {
		if n := t.Field(i).Tag.Get("config"); n != "" {
			out = append(out, n)
		}
	}
	return out
}
