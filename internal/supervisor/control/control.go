// Package control is the control protocol of a local cluster's supervisor
// (internal/supervisor): one JSON Request and one JSON Response per
// connection, over a unix socket. The commands that drive a running
// supervisor (cluster status, kill, start, down) need only this package, not
// the brokers the supervisor runs.
package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
)

// Operations of the control protocol.
const (
	OpStatus   = "status"   // report every broker
	OpKill     = "kill"     // Kill(Broker)
	OpStart    = "start"    // Start(Broker) and wait until it is ready
	OpShutdown = "shutdown" // stop every broker cleanly and exit
)

// Request is one control call.
type Request struct {
	Op     string `json:"op"`
	Broker int32  `json:"broker"`
}

// Response answers a Request; Error is set when it failed.
type Response struct {
	Error   string        `json:"error,omitempty"`
	Brokers []BrokerState `json:"brokers,omitempty"`
}

// MaxRequest bounds what a control connection may send.
const MaxRequest = 4 << 10

// BrokerState is what the supervisor reports about one broker.
type BrokerState struct {
	ID      int32  `json:"id"`
	Running bool   `json:"running"`
	Ready   bool   `json:"ready"`
	Addr    string `json:"addr,omitempty"`
}

// Call sends one request to the supervisor listening on path. A Response
// carrying an error is returned with that error.
func Call(ctx context.Context, path string, req Request) (Response, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return Response{}, fmt.Errorf("supervisor not reachable on %s: %w", path, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return Response{}, fmt.Errorf("supervisor on %s: %w", path, err)
	}
	var resp Response
	if err := json.NewDecoder(conn).Decode(&resp); err != nil {
		if ctx.Err() != nil {
			return Response{}, ctx.Err()
		}
		return Response{}, fmt.Errorf("supervisor on %s: %w", path, err)
	}
	if resp.Error != "" {
		return resp, errors.New(resp.Error)
	}
	return resp, nil
}
