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
		RequestCost:                  requestCost,
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

// Bytes a request may hold per byte of its frame, for queued.max.request.bytes.
// Produce keeps its records as the frame's own bytes; only its partition list
// is decoded into structs. Other requests decode into structs of up to 16 times
// their wire size (kmsg, measured on Metadata topic lists; DescribeConfigs 7,
// Fetch 4.5), and their handlers keep answers within a constant of that
// (names are deduplicated). So with the default budget a Produce may use all of
// socket.request.max.bytes, and other requests are refused above 12.5 MiB.
const (
	produceCost       = 2
	requestCostFactor = 16
)

func requestCost(key int16, size int) int64 {
	if key == 0 {
		return produceCost * int64(size)
	}
	return requestCostFactor * int64(size)
}
