package zkdata

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// BrokerInfoVersion is the registration format Kafka 2.7 and later write.
const BrokerInfoVersion = 5

// Security protocols a listener can map to.
const (
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSASLPlaintext = "SASL_PLAINTEXT"
	ProtocolSASLSSL       = "SASL_SSL"
)

func validProtocol(p string) bool {
	switch p {
	case ProtocolPlaintext, ProtocolSSL, ProtocolSASLPlaintext, ProtocolSASLSSL:
		return true
	}
	return false
}

// Endpoint is one advertised listener, written as LISTENER://host:port.
type Endpoint struct {
	Listener         string
	SecurityProtocol string
	Host             string
	Port             int32
}

func (e Endpoint) String() string {
	return e.Listener + "://" + net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port)))
}

// ParseEndpoint parses LISTENER://host:port ([v6]:port allowed, empty host
// allowed). The security protocol comes from protocols (listener name to
// protocol) or, without an entry, is the listener name itself.
func ParseEndpoint(s string, protocols map[string]string) (Endpoint, error) {
	listener, addr, ok := strings.Cut(s, "://")
	if !ok || listener == "" {
		return Endpoint{}, fmt.Errorf("endpoint %q: want LISTENER://host:port", s)
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return Endpoint{}, fmt.Errorf("endpoint %q: %w", s, err)
	}
	port, err := strconv.ParseInt(portStr, 10, 32)
	if err != nil || port < -1 || port > 65535 {
		return Endpoint{}, fmt.Errorf("endpoint %q: bad port %q", s, portStr)
	}
	listener = strings.ToUpper(listener)
	proto := listener
	if p, ok := protocols[listener]; ok {
		proto = p
	}
	if !validProtocol(proto) {
		return Endpoint{}, fmt.Errorf("endpoint %q: no security protocol for listener %s", s, listener)
	}
	return Endpoint{Listener: listener, SecurityProtocol: proto, Host: host, Port: int32(port)}, nil
}

// FeatureRange is a supported feature's version range (KIP-584).
type FeatureRange struct {
	MinVersion int16 `json:"min_version"`
	MaxVersion int16 `json:"max_version"`
}

// BrokerInfo is a broker's registration at /brokers/ids/<id>.
type BrokerInfo struct {
	ID int32
	// Version is the JSON format version; Encode writes BrokerInfoVersion
	// when it is 0.
	Version int
	// Host and Port are the top-level fields older clients read: Encode
	// fills them from the first PLAINTEXT endpoint when Host is empty, as
	// Kafka does (null and -1 without one).
	Host      string
	Port      int32
	Endpoints []Endpoint
	Rack      string
	JmxPort   int32
	// Timestamp is the registration time; Encode writes the current time
	// when it is zero.
	Timestamp time.Time
	Features  map[string]FeatureRange
	// Epoch is the broker epoch: the czxid of the registration znode. It is
	// not in the JSON; whoever reads the znode sets it from the stat.
	Epoch int64
}

// Endpoint returns the endpoint of listener, if the broker has one.
func (b BrokerInfo) Endpoint(listener string) (Endpoint, bool) {
	for _, e := range b.Endpoints {
		if strings.EqualFold(e.Listener, listener) {
			return e, true
		}
	}
	return Endpoint{}, false
}

type brokerJSON struct {
	Version                     int                     `json:"version"`
	Host                        *string                 `json:"host"`
	Port                        *int32                  `json:"port"`
	Endpoints                   []string                `json:"endpoints"`
	ListenerSecurityProtocolMap map[string]string       `json:"listener_security_protocol_map"`
	Rack                        *string                 `json:"rack"`
	JmxPort                     *int32                  `json:"jmx_port"`
	Timestamp                   string                  `json:"timestamp"`
	Features                    map[string]FeatureRange `json:"features"`
}

// EncodeBrokerInfo writes b as Kafka's BrokerIdZNode does.
func EncodeBrokerInfo(b BrokerInfo) []byte {
	version := b.Version
	if version == 0 {
		version = BrokerInfoVersion
	}
	ts := b.Timestamp
	if ts.IsZero() {
		ts = time.Now()
	}
	endpoints := make([]string, 0, len(b.Endpoints))
	for _, e := range b.Endpoints {
		endpoints = append(endpoints, e.String())
	}
	var host any
	port := int32(-1)
	if b.Host != "" {
		host, port = b.Host, b.Port
	} else {
		for _, e := range b.Endpoints {
			if e.SecurityProtocol == ProtocolPlaintext {
				host, port = e.Host, e.Port
				break
			}
		}
	}
	m := map[string]any{
		"version":   version,
		"host":      host,
		"port":      port,
		"endpoints": endpoints,
		"jmx_port":  b.JmxPort,
		"timestamp": strconv.FormatInt(ts.UnixMilli(), 10),
	}
	if b.Rack != "" && version >= 3 {
		m["rack"] = b.Rack
	}
	if version >= 4 {
		protocols := map[string]string{}
		for _, e := range b.Endpoints {
			protocols[e.Listener] = e.SecurityProtocol
		}
		m["listener_security_protocol_map"] = protocols
	}
	if version >= 5 {
		features := b.Features
		if features == nil {
			features = map[string]FeatureRange{}
		}
		m["features"] = features
	}
	return marshal(m)
}

// DecodeBrokerInfo reads the registration of broker id, in any format
// version Kafka wrote (1 to 5). Epoch is left for the caller to set from
// the znode's czxid.
func DecodeBrokerInfo(id int32, data []byte) (BrokerInfo, error) {
	var j brokerJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return BrokerInfo{}, fmt.Errorf("broker %d registration: %w", id, err)
	}
	if j.Version < 1 {
		return BrokerInfo{}, fmt.Errorf("broker %d registration: unsupported version %d", id, j.Version)
	}
	b := BrokerInfo{ID: id, Version: j.Version, JmxPort: -1, Features: j.Features}
	if j.JmxPort != nil {
		b.JmxPort = *j.JmxPort
	}
	if j.Host != nil {
		b.Host = *j.Host
	}
	b.Port = -1
	if j.Port != nil {
		b.Port = *j.Port
	}
	if j.Rack != nil {
		b.Rack = *j.Rack
	}
	if j.Timestamp != "" {
		ms, err := strconv.ParseInt(j.Timestamp, 10, 64)
		if err != nil {
			return BrokerInfo{}, fmt.Errorf("broker %d registration: timestamp %q: %w", id, j.Timestamp, err)
		}
		b.Timestamp = time.UnixMilli(ms)
	}
	if j.Version == 1 {
		if j.Host == nil || j.Port == nil {
			return BrokerInfo{}, fmt.Errorf("broker %d registration: version 1 needs host and port", id)
		}
		b.Endpoints = []Endpoint{{Listener: ProtocolPlaintext, SecurityProtocol: ProtocolPlaintext, Host: b.Host, Port: b.Port}}
		return b, nil
	}
	protocols := map[string]string{}
	for l, p := range j.ListenerSecurityProtocolMap {
		protocols[strings.ToUpper(l)] = p
	}
	for _, s := range j.Endpoints {
		e, err := ParseEndpoint(s, protocols)
		if err != nil {
			return BrokerInfo{}, fmt.Errorf("broker %d registration: %w", id, err)
		}
		b.Endpoints = append(b.Endpoints, e)
	}
	return b, nil
}
