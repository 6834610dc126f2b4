package broker

import (
	"context"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/auth"
	"github.com/ktoolhq/ktool/broker/protocol"
	cq "github.com/ktoolhq/ktool/broker/quota"
)

// handler serves one request. It must call respond exactly once, now or later.
type handler func(b *Broker, rc *reqCtx, req kmsg.Request, respond func(protocol.Response))

type api struct {
	key      int16
	min, max int16
	// advertisedMin, when below min, is what ApiVersions lists (see 00_produce.go).
	advertisedMin int16
	handle        handler
}

// apis is filled by the init functions of the NN_*.go files and never changed after.
var apis = map[int16]api{}

// advertisedMax caps what ApiVersions lists for a key whose newer versions
// are for brokers only (AddPartitionsToTxn v4, see 24_add_partitions_to_txn.go).
var advertisedMax = map[int16]int16{}

func register(key, min, max int16, h handler) { registerAdvertised(key, min, min, max, h) }

// registerAdvertised registers a handler that serves min..max but lists
// advertisedMin..max in ApiVersions (see 00_produce.go for the one user).
func registerAdvertised(key, advertisedMin, min, max int16, h handler) {
	apis[key] = api{key: key, min: min, max: max, advertisedMin: advertisedMin, handle: h}
}

// apiKeys lists what this broker serves, for ApiVersions.
func apiKeys() []kmsg.ApiVersionsResponseApiKey {
	out := make([]kmsg.ApiVersionsResponseApiKey, 0, len(apis))
	for _, a := range apis {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.key, a.advertisedMin, a.max
		if m, ok := advertisedMax[a.key]; ok {
			k.MaxVersion = m
		}
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ApiKey < out[j].ApiKey })
	return out
}

// reqCtx is what a handler knows about the request besides its body,
// including who sent it on which listener (identity), for authorization.
type reqCtx struct {
	ctx      context.Context
	conn     *protocol.Conn
	header   protocol.Header
	identity auth.Identity
	session  *session
}

// Handle implements protocol.Handler.
func (b *Broker) Handle(ctx context.Context, c *protocol.Conn, h protocol.Header, req kmsg.Request, respond func(protocol.Response)) {
	a, ok := apis[h.Key]
	if !ok || h.Version < a.min || h.Version > a.max {
		if h.Key == 18 { // ApiVersions: answer so the client can pick a version (KIP-511)
			a = apis[18]
		} else {
			b.logger.Warn("unsupported request; closing connection", "api", kmsg.NameForKey(h.Key), "version", h.Version,
				"client_id", h.ClientID, "remote", c.RemoteAddr().String())
			c.Close()
			respond(protocol.Response{None: true})
			return
		}
	}
	sess, err := b.session(c)
	if err != nil {
		b.logger.Warn("refusing connection", "remote", c.RemoteAddr().String(), "err", err)
		c.Close()
		respond(protocol.Response{None: true})
		return
	}
	if !c.Authenticated() && !preAuth[h.Key] {
		// Kafka closes a SASL connection that sends anything else before
		// authenticating.
		b.logger.Warn("request before SASL authentication; closing connection", "api", kmsg.NameForKey(h.Key),
			"listener", sess.identity.Listener, "remote", c.RemoteAddr().String())
		c.Close()
		respond(protocol.Response{None: true})
		return
	}
	b.metrics.request(h.Key)
	if !interBroker[h.Key] {
		b.awaitReady(ctx)
	}
	rc := &reqCtx{ctx: ctx, conn: c, header: h, identity: sess.identity, session: sess}
	if !b.gate(rc, req, respond) {
		return
	}
	if b.quotas.Active() && b.quotas.Table().Has(cq.Request) && !requestQuotaExempt[h.Key] {
		b.withRequestQuota(rc, req, a, respond)
		return
	}
	a.handle(b, rc, req, respond)
}

// interBroker are the requests a starting broker serves before it is ready: the
// controller's (which make it ready), ApiVersions and authentication.
var interBroker = map[int16]bool{4: true, 5: true, 6: true, 7: true, 17: true, 18: true, 36: true}

// preAuth are the requests served on a SASL listener before authentication.
var preAuth = map[int16]bool{17: true, 18: true, 36: true}

// awaitReady holds a client request until the broker is registered and has the
// controller's metadata, as Kafka does not process requests before its startup
// completes: answered earlier, a Metadata request would find no topic at all
// (and try to create existing ones). Bounded, so a broker that cannot join still
// answers, with errors.
func (b *Broker) awaitReady(ctx context.Context) {
	select {
	case <-b.ready:
		return
	default:
	}
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case <-b.ready:
	case <-ctx.Done():
	case <-t.C:
	}
}
