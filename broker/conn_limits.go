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
func connLimits(ctx context.Context, s *config.Settings) (protocol.Limits, time.Duration, error) {
	overrides := map[string]int{}
	for host, n := range s.MaxConnectionsPerIPOverrides {
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
		MaxConnections:               s.MaxConnections,
		MaxConnectionsPerIP:          s.MaxConnectionsPerIP,
		MaxConnectionsPerIPOverrides: overrides,
		QueuedMaxRequests:            s.QueuedMaxRequests,
		MaxPreAuthRequestSize:        int32(s.SASLServerMaxReceiveSize),
	}
	if v := s.QueuedMaxRequestBytes; v > 0 {
		l.QueuedMaxRequestBytes = int64(v)
	}
	var idle time.Duration
	if v := s.ConnectionsMaxIdle; v > 0 {
		idle = v
	}
	return l, idle, nil
}
