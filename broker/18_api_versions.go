package broker

// ApiVersions, key 18, v0-v3.
//
// Lists every API key this broker serves with its version range, taken from the
// registry the NN_*.go files fill, so what is advertised is what is implemented.
// A request at a version above 3 is answered in v0 with UNSUPPORTED_VERSION and the
// list (KIP-511), which the protocol layer does before the body is parsed.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
)

func init() { register(18, 0, 3, handleAPIVersions) }

func handleAPIVersions(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	resp := r.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = apiKeys()
	respond(protocol.Response{Msg: resp})
}
