package broker

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/ktoolhq/ktool/broker/config"
	"github.com/ktoolhq/ktool/broker/protocol"
)

// connLimits reads the connection and queue settings (Kafka's names) for the
// protocol server. Host names in max.connections.per.ip.overrides are resolved
// once, at start, as Kafka does.
func connLimits(ctx context.Context, cfg *config.Broker) (protocol.Limits, time.Duration, error) {
	raw, err := config.ParseIPOverrides(cfg.String("max.connections.per.ip.overrides"))
	if err != nil {
		return protocol.Limits{}, 0, err
	}
	overrides := map[string]int{}
	for host, n := range raw {
		if ip := net.ParseIP(host); ip != nil {
			overrides[ip.String()] = n
			continue
		}
		addrs, err := net.DefaultResolver.LookupHost(ctx, host)
		if err != nil {
			return protocol.Limits{}, 0, fmt.Errorf("max.connections.per.ip.overrides: resolving %s: %w", host, err)
		}
		for _, a := range addrs {
			overrides[net.ParseIP(a).String()] = n
		}
	}
	l := protocol.Limits{
		MaxConnections:               int(cfg.Int("max.connections")),
		MaxConnectionsPerIP:          int(cfg.Int("max.connections.per.ip")),
		MaxConnectionsPerIPOverrides: overrides,
		QueuedMaxRequests:            int(cfg.Int("queued.max.requests")),
		MaxPreAuthRequestSize:        int32(cfg.Int("sasl.server.max.receive.size")),
	}
	if v := cfg.Int("queued.max.request.bytes"); v > 0 {
		l.QueuedMaxRequestBytes = v
	}
	var idle time.Duration
	if v := cfg.Int("connections.max.idle.ms"); v > 0 {
		idle = time.Duration(v) * time.Millisecond
	}
	return l, idle, nil
}
