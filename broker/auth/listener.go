package auth

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Security protocols, as Kafka names them and numbers them in UpdateMetadata.
const (
	Plaintext     = "PLAINTEXT"
	SSL           = "SSL"
	SASLPlaintext = "SASL_PLAINTEXT"
	SASLSSL       = "SASL_SSL"
)

// ProtocolID is the number UpdateMetadata and Kafka's SecurityProtocol use.
func ProtocolID(p string) int16 {
	switch p {
	case SSL:
		return 1
	case SASLPlaintext:
		return 2
	case SASLSSL:
		return 3
	}
	return 0
}

// ProtocolName is the inverse of ProtocolID.
func ProtocolName(id int16) string {
	switch id {
	case 1:
		return SSL
	case 2:
		return SASLPlaintext
	case 3:
		return SASLSSL
	}
	return Plaintext
}

// UsesTLS reports whether protocol p runs over TLS.
func UsesTLS(p string) bool { return p == SSL || p == SASLSSL }

// UsesSASL reports whether protocol p authenticates with SASL.
func UsesSASL(p string) bool { return p == SASLPlaintext || p == SASLSSL }

// Listener is one configured listener: where it binds and what clients are told.
type Listener struct {
	Name     string // upper case, as Kafka normalises listener names
	Protocol string // security protocol
	Host     string // bind host ("" is every interface)
	Port     int
	// AdvertisedHost and AdvertisedPort are published in /brokers/ids/N and
	// Metadata; port 0 means the bound port, host "" the resolved host name.
	AdvertisedHost string
	AdvertisedPort int
}

// DefaultProtocolMap is listener.security.protocol.map's default: each protocol
// name is also a listener name.
const DefaultProtocolMap = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"

// ParseProtocolMap reads listener.security.protocol.map (NAME:PROTOCOL,...).
func ParseProtocolMap(s string) (map[string]string, error) {
	m := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, proto, ok := strings.Cut(part, ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || name == "" {
			return nil, fmt.Errorf("listener.security.protocol.map: %q is not NAME:PROTOCOL", part)
		}
		switch proto {
		case Plaintext, SSL, SASLPlaintext, SASLSSL:
		default:
			return nil, fmt.Errorf("listener.security.protocol.map: %q: unknown security protocol %q (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)", part, proto)
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("listener.security.protocol.map: listener %s appears twice", name)
		}
		m[name] = proto
	}
	return m, nil
}

type uri struct {
	name string
	host string
	port int
}

func parseURI(s string) (uri, error) {
	i := strings.Index(s, "://")
	if i <= 0 {
		return uri{}, fmt.Errorf("listener %q is not NAME://host:port", s)
	}
	host, port, err := net.SplitHostPort(s[i+3:])
	if err != nil {
		return uri{}, fmt.Errorf("listener %q: %v", s, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return uri{}, fmt.Errorf("listener %q: bad port %q", s, port)
	}
	return uri{name: strings.ToUpper(s[:i]), host: host, port: p}, nil
}

// ParseListeners reads listeners and advertised.listeners (nil: the same as
// listeners) against a security protocol map. Names must be unique and mapped;
// every advertised listener must be one of listeners.
func ParseListeners(listeners, advertised []string, protocols map[string]string) ([]Listener, error) {
	if len(listeners) == 0 {
		return nil, fmt.Errorf("listeners is empty")
	}
	var out []Listener
	index := map[string]int{}
	for _, s := range listeners {
		u, err := parseURI(s)
		if err != nil {
			return nil, err
		}
		proto, ok := protocols[u.name]
		if !ok {
			return nil, fmt.Errorf("listener %q: no security protocol for %s in listener.security.protocol.map", s, u.name)
		}
		if _, dup := index[u.name]; dup {
			return nil, fmt.Errorf("listeners: listener name %s appears twice", u.name)
		}
		for _, l := range out {
			if l.Port == u.port && u.port != 0 && l.Host == u.host {
				return nil, fmt.Errorf("listeners: %s and %s bind the same address", l.Name, u.name)
			}
		}
		index[u.name] = len(out)
		out = append(out, Listener{Name: u.name, Protocol: proto, Host: u.host, Port: u.port, AdvertisedHost: u.host})
	}
	if len(advertised) > 0 {
		seen := map[string]bool{}
		for i := range out {
			out[i].AdvertisedHost, out[i].AdvertisedPort = "", 0
		}
		for _, s := range advertised {
			u, err := parseURI(s)
			if err != nil {
				return nil, fmt.Errorf("advertised.listeners: %w", err)
			}
			i, ok := index[u.name]
			if !ok {
				return nil, fmt.Errorf("advertised.listeners: %s is not in listeners", u.name)
			}
			if seen[u.name] {
				return nil, fmt.Errorf("advertised.listeners: listener name %s appears twice", u.name)
			}
			seen[u.name] = true
			out[i].AdvertisedHost, out[i].AdvertisedPort = u.host, u.port
		}
		// A listener left out of advertised.listeners is published as it binds,
		// as Kafka does.
		for i := range out {
			if !seen[out[i].Name] {
				out[i].AdvertisedHost, out[i].AdvertisedPort = out[i].Host, out[i].Port
			}
		}
	}
	return out, nil
}

// InterBrokerListener picks the listener brokers use to talk to each other:
// inter.broker.listener.name when set, else the first listener whose protocol is
// security.inter.broker.protocol (Kafka takes the listener named after it).
func InterBrokerListener(ls []Listener, name, protocol string) (Listener, error) {
	if name != "" {
		for _, l := range ls {
			if strings.EqualFold(l.Name, name) {
				return l, nil
			}
		}
		return Listener{}, fmt.Errorf("inter.broker.listener.name %s is not one of listeners", name)
	}
	if protocol == "" {
		protocol = Plaintext
	}
	protocol = strings.ToUpper(protocol)
	for _, l := range ls {
		if l.Name == protocol {
			return l, nil
		}
	}
	return Listener{}, fmt.Errorf("security.inter.broker.protocol=%s but no listener is named %s; set inter.broker.listener.name", protocol, protocol)
}
