package broker

// SaslHandshake, key 17, v0-v1.
//
// Names the SASL mechanism a client will authenticate with; the tokens follow
// in SaslAuthenticate (36). Version 0, where raw tokens follow outside Kafka
// framing, is listed (librdkafka takes its absence to mean the broker has no
// SASL at all) but a v0 handshake on a SASL listener is answered
// UNSUPPORTED_VERSION and the connection closes: every client since Kafka 1.0
// sends v1. On a listener without SASL the answer is ILLEGAL_SASL_STATE, as
// Kafka's. A mechanism the listener does not enable is answered with
// UNSUPPORTED_SASL_MECHANISM and the enabled list, and the connection closes.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
)

func init() { register(17, 0, 1, handleSaslHandshake) }

func handleSaslHandshake(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	l := b.listenerOf(rc.session)
	if l == nil || l.sasl == nil || rc.conn.Authenticated() || rc.session.handshaken {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		respond(protocol.Response{Msg: resp, Close: l != nil && l.sasl != nil})
		return
	}
	resp.SupportedMechanisms = l.sasl.Mechanisms
	if req.GetVersion() == 0 {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		respond(protocol.Response{Msg: resp, Close: true})
		return
	}
	x, err := l.sasl.Start(req.Mechanism)
	if err != nil {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		respond(protocol.Response{Msg: resp, Close: true})
		return
	}
	rc.session.handshaken = true
	rc.session.exchange = x
	rc.session.identity.Mechanism = req.Mechanism
	respond(protocol.Response{Msg: resp})
}
