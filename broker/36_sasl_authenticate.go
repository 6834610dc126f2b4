package broker

// SaslAuthenticate, key 36, v0-v2.
//
// Carries the SASL tokens of the mechanism chosen in SaslHandshake. On
// success the connection's principal is the authenticated user and every API
// is served; session_lifetime_ms is 0 (connections.max.reauth.ms is not
// supported, so no re-authentication is asked for). A failure answers
// SASL_AUTHENTICATION_FAILED with Kafka's message, which says nothing of why,
// and closes the connection; the reason goes to the broker's log.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
)

func init() { register(36, 0, 2, handleSaslAuthenticate) }

func handleSaslAuthenticate(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	s := rc.session
	l := b.listenerOf(s)
	if l == nil || l.sasl == nil || rc.conn.Authenticated() || s.exchange == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate without a SaslHandshake on a SASL listener"
		resp.ErrorMessage = &msg
		respond(protocol.Response{Msg: resp, Close: l != nil && l.sasl != nil})
		return
	}
	out, done, err := s.exchange.Step(rc.ctx, req.SASLAuthBytes)
	if err != nil {
		b.logger.Warn("SASL authentication failed", "listener", l.Name, "mechanism", s.identity.Mechanism,
			"remote", rc.conn.RemoteAddr().String(), "err", err)
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := "Authentication failed during authentication due to invalid credentials with SASL mechanism " + s.identity.Mechanism
		resp.ErrorMessage = &msg
		s.exchange = nil
		respond(protocol.Response{Msg: resp, Close: true})
		return
	}
	resp.SASLAuthBytes = out
	if done {
		s.identity.Principal = s.exchange.Principal()
		rc.conn.SetAuthenticated()
		s.exchange = nil
	}
	respond(protocol.Response{Msg: resp})
}
