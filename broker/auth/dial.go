package auth

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/ktoolhq/ktool/broker/config"
	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/jaas"
)

// Dialer opens broker-to-broker connections on the inter-broker listener:
// TCP, then TLS when the listener's protocol uses it, then SASL when it does.
type Dialer struct {
	TLS  *tls.Config    // nil: no TLS
	SASL sasl.Mechanism // nil: no SASL
}

// NewDialer builds the dialer of a broker for listener l, from its own
// settings: ssl.* for TLS (truststore, and keystore for mTLS),
// sasl.mechanism.inter.broker.protocol and the username/password of the
// mechanism's sasl.jaas.config for SASL.
func NewDialer(s *config.ListenerSecurity, l Listener, mechanism string) (*Dialer, error) {
	d := &Dialer{}
	if UsesTLS(l.Protocol) {
		cfg, err := ClientTLS(s)
		if err != nil {
			return nil, fmt.Errorf("inter-broker TLS: %w", err)
		}
		d.TLS = cfg
	}
	if UsesSASL(l.Protocol) {
		mech := strings.ToUpper(mechanism)
		v := s.JAAS(mech)
		if v == "" {
			return nil, fmt.Errorf("inter-broker SASL %s: no sasl.jaas.config for listener %s with the broker's username and password", mech, l.Name)
		}
		e, err := jaas.Parse(v)
		if err != nil {
			return nil, err
		}
		user, pass := e.Options["username"], e.Options["password"]
		if user == "" {
			return nil, fmt.Errorf("inter-broker SASL %s: sasl.jaas.config of listener %s has no username", mech, l.Name)
		}
		switch mech {
		case Plain:
			d.SASL = plain.Auth{User: user, Pass: pass}.AsMechanism()
		case ScramSHA256:
			d.SASL = scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
		case ScramSHA512:
			d.SASL = scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
		default:
			return nil, fmt.Errorf("sasl.mechanism.inter.broker.protocol %s is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", mech)
		}
	}
	return d, nil
}

// Dial connects to addr and authenticates.
func (d *Dialer) Dial(ctx context.Context, addr string) (net.Conn, error) {
	var nd net.Dialer
	conn, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(30 * time.Second)
	}
	_ = conn.SetDeadline(deadline)
	if d.TLS != nil {
		cfg := d.TLS.Clone()
		if cfg.ServerName == "" {
			host, _, _ := net.SplitHostPort(addr)
			cfg.ServerName = host
		}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		conn = tc
	}
	if d.SASL != nil {
		if err := authenticate(ctx, conn, addr, d.SASL); err != nil {
			conn.Close()
			return nil, err
		}
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, nil
}

// authenticate runs SaslHandshake v1 and SaslAuthenticate v1 on conn.
func authenticate(ctx context.Context, conn net.Conn, addr string, mech sasl.Mechanism) error {
	br := bufio.NewReader(conn)
	corr := int32(0)
	rt := func(req kmsg.Request) (kmsg.Response, error) {
		corr++
		buf := make([]byte, 4, 128)
		buf = kbin.AppendInt16(buf, req.Key())
		buf = kbin.AppendInt16(buf, req.GetVersion())
		buf = kbin.AppendInt32(buf, corr)
		id := "ktool-broker"
		buf = kbin.AppendNullableString(buf, &id)
		buf = req.AppendTo(buf)
		binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
		if _, err := conn.Write(buf); err != nil {
			return nil, err
		}
		frame, err := protocol.ReadFrame(br, 1<<20)
		if err != nil {
			return nil, err
		}
		if len(frame) < 4 || int32(binary.BigEndian.Uint32(frame)) != corr {
			return nil, errors.New("bad SASL response frame")
		}
		resp := req.ResponseKind()
		resp.SetVersion(req.GetVersion())
		return resp, resp.ReadFrom(frame[4:])
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = mech.Name()
	raw, err := rt(hs)
	if err != nil {
		return fmt.Errorf("SASL handshake with %s: %w", addr, err)
	}
	if err := kerr.ErrorForCode(raw.(*kmsg.SASLHandshakeResponse).ErrorCode); err != nil {
		return fmt.Errorf("SASL handshake with %s (%s): %w", addr, mech.Name(), err)
	}
	host, _, _ := net.SplitHostPort(addr)
	sess, msg, err := mech.Authenticate(ctx, host)
	if err != nil {
		return err
	}
	for {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SetVersion(1)
		req.SASLAuthBytes = msg
		raw, err := rt(req)
		if err != nil {
			return fmt.Errorf("SASL authenticate with %s: %w", addr, err)
		}
		resp := raw.(*kmsg.SASLAuthenticateResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			m := ""
			if resp.ErrorMessage != nil {
				m = ": " + *resp.ErrorMessage
			}
			return fmt.Errorf("SASL %s with %s: %w%s", mech.Name(), addr, err, m)
		}
		done, next, err := sess.Challenge(resp.SASLAuthBytes)
		if err != nil {
			return fmt.Errorf("SASL %s with %s: %w", mech.Name(), addr, err)
		}
		if done {
			return nil
		}
		msg = next
	}
}
