package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/ktoolhq/ktool/broker/auth"
	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// listenerState is one open listener and how it authenticates.
type listenerState struct {
	auth.Listener
	ln     net.Listener
	sasl   *auth.SASLServer // SASL_PLAINTEXT and SASL_SSL
	mapper *auth.Mapper     // SSL: certificate subject to principal
}

// session is what the broker knows of one connection's authentication. Only
// the connection's reader goroutine (where handlers start) changes it; the
// authenticated state itself is the connection's (protocol.Conn.Authenticated),
// which also bounds frames before it.
type session struct {
	identity   auth.Identity
	host       string // the client's IP address, for ACL hosts
	handshaken bool
	exchange   auth.Exchange
}

// parseListeners reads listeners, listener.security.protocol.map,
// advertised.listeners and the inter-broker listener.
func parseListeners(b *Broker) error {
	s := b.cfg.Settings()
	protocols, err := auth.ParseProtocolMap(s.ListenerProtocols)
	if err != nil {
		return err
	}
	ls, err := auth.ParseListeners(s.Listeners, s.AdvertisedListeners, protocols)
	if err != nil {
		return err
	}
	if s.InterBrokerListenerName != "" && s.SecurityInterBrokerProtocol != "" {
		return errors.New("set only one of inter.broker.listener.name and security.inter.broker.protocol")
	}
	ib, err := auth.InterBrokerListener(ls, s.InterBrokerListenerName, s.SecurityInterBrokerProtocol)
	if err != nil {
		return err
	}
	for _, l := range ls {
		if _, err := b.cfg.Listener(l.Name); err != nil {
			return fmt.Errorf("listener %s: %w", l.Name, err)
		}
	}
	b.listenerCfg, b.interBroker = ls, ib
	return nil
}

// openListeners binds every listener, with TLS where its protocol says so,
// and prepares its SASL mechanisms and principal mapping.
func (b *Broker) openListeners() error {
	for _, l := range b.listenerCfg {
		s, err := b.cfg.Listener(l.Name)
		if err != nil {
			return fmt.Errorf("listener %s: %w", l.Name, err)
		}
		st := &listenerState{Listener: l}
		ln, err := net.Listen("tcp", net.JoinHostPort(l.Host, strconv.Itoa(l.Port)))
		if err != nil {
			return fmt.Errorf("listening on %s://%s: %w", l.Name, net.JoinHostPort(l.Host, strconv.Itoa(l.Port)), err)
		}
		st.ln = ln
		b.listeners = append(b.listeners, st)
		if st.AdvertisedPort == 0 {
			st.AdvertisedPort = ln.Addr().(*net.TCPAddr).Port
		}
		if h := st.AdvertisedHost; h == "" || h == "0.0.0.0" || h == "::" {
			st.AdvertisedHost = "localhost"
			if hn, err := os.Hostname(); err == nil && len(b.cfg.Settings().AdvertisedListeners) > 0 {
				st.AdvertisedHost = hn
			}
		}
		if auth.UsesTLS(l.Protocol) {
			name := l.Name
			cfg, err := auth.ServerTLS(s, func(err error) {
				b.logger.Error("reloading TLS certificates failed; keeping the previous ones", "listener", name, "err", err)
			})
			if err != nil {
				return fmt.Errorf("listener %s: %w", l.Name, err)
			}
			st.ln = tls.NewListener(ln, cfg)
			if st.mapper, err = auth.ParseMappingRules(s.PrincipalMappingRules); err != nil {
				return fmt.Errorf("listener %s: %w", l.Name, err)
			}
		}
		if auth.UsesSASL(l.Protocol) {
			if st.sasl, err = auth.NewSASLServer(s, b.scramCredential); err != nil {
				return fmt.Errorf("listener %s: %w", l.Name, err)
			}
		}
		if l.Name == b.interBroker.Name {
			b.interBroker = st.Listener
		}
	}
	s, err := b.cfg.Listener(b.interBroker.Name)
	if err != nil {
		return err
	}
	d, err := auth.NewDialer(s, b.interBroker, b.cfg.Settings().SASLMechanismInterBroker)
	if err != nil {
		return err
	}
	b.dialer = d
	return nil
}

// endpoints are the advertised listeners, for /brokers/ids/N.
func (b *Broker) endpoints() []zkdata.Endpoint {
	out := make([]zkdata.Endpoint, 0, len(b.listeners))
	for _, l := range b.listeners {
		out = append(out, zkdata.Endpoint{Listener: l.Name, SecurityProtocol: l.Protocol, Host: l.AdvertisedHost, Port: int32(l.AdvertisedPort)})
	}
	return out
}

// ListenerAddr is the bound address of a listener (after Start).
func (b *Broker) ListenerAddr(name string) string {
	for _, l := range b.listeners {
		if l.Name == name {
			return l.ln.Addr().String()
		}
	}
	return ""
}

// interBrokerAddr is broker id's address on the inter-broker listener.
func (b *Broker) interBrokerAddr(id int32) (string, bool) {
	ep, ok := b.meta.broker(id)
	if !ok {
		return "", false
	}
	hp, ok := ep.on(b.interBroker.Name)
	if !ok {
		return "", false
	}
	return hostPort(hp.Host, hp.Port), true
}

// interBrokerClient is a client to another broker's inter-broker listener.
func (b *Broker) interBrokerClient(addr, clientID string) *protocol.Client {
	return &protocol.Client{Addr: addr, ClientID: clientID, Dial: b.dialer.Dial}
}

// scramCredential reads a user's SCRAM credential from /config/users/<user>.
func (b *Broker) scramCredential(ctx context.Context, mechanism, user string) (zkdata.ScramCredential, error) {
	if err := zkdata.ValidUserName(user); err != nil {
		return zkdata.ScramCredential{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	data, _, err := b.Store().Get(ctx, zkdata.ConfigUserPath(user))
	if errors.Is(err, coord.ErrNoNode) {
		return zkdata.ScramCredential{}, fmt.Errorf("no user %q", user)
	}
	if err != nil {
		return zkdata.ScramCredential{}, err
	}
	m, err := zkdata.DecodeConfig(data)
	if err != nil {
		return zkdata.ScramCredential{}, err
	}
	v, ok := m[mechanism]
	if !ok {
		return zkdata.ScramCredential{}, fmt.Errorf("user %q has no %s credential", user, mechanism)
	}
	return zkdata.DecodeScramCredential(v)
}

// sessions holds the authentication state of every open connection.
type sessions struct{ m sync.Map }

// get returns the connection's session, making it on its first request: by
// then a TLS handshake is complete, so the certificate's principal is known.
func (b *Broker) session(c *protocol.Conn) (*session, error) {
	if v, ok := b.sessions.m.Load(c); ok {
		return v.(*session), nil
	}
	var st *listenerState
	for _, l := range b.listeners {
		if l.ln == c.Listener() {
			st = l
		}
	}
	if st == nil {
		return nil, errors.New("connection from an unknown listener")
	}
	s := &session{identity: auth.Identity{Principal: auth.Anonymous, Listener: st.Name, Protocol: st.Protocol}, host: remoteHost(c.RemoteAddr())}
	if tc, ok := c.NetConn().(*tls.Conn); ok {
		if certs := tc.ConnectionState().PeerCertificates; len(certs) > 0 {
			p, err := st.mapper.CertPrincipal(certs[0])
			if err != nil {
				return nil, err
			}
			s.identity.Principal = p
		}
	}
	b.sessions.m.Store(c, s)
	context.AfterFunc(c.Context(), func() { b.sessions.m.Delete(c) })
	return s, nil
}

// listenerOf returns the state of a session's listener.
func (b *Broker) listenerOf(s *session) *listenerState {
	for _, l := range b.listeners {
		if l.Name == s.identity.Listener {
			return l
		}
	}
	return nil
}
