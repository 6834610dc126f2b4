package plugins

import (
	"context"
	"fmt"
	"math"
	"runtime/debug"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// maxMessage lifts gRPC's 4 MiB default: one codec call may carry several
// batches, each up to Kafka's largest message size, and an assignment for
// thousands of members is larger still.
const maxMessage = math.MaxInt32

// HTTP/2 flow control windows and socket buffers sized for calls of
// megabytes over a local socket: with gRPC's 64 KiB defaults a 4 MiB call
// waits on dozens of window updates.
const (
	flowWindow = 16 << 20
	ioBuffer   = 1 << 20
)

// Service names, versioned with the handshake's protocol version.
const (
	codecService    = "ktool.plugin.v1.Codec"
	assignorService = "ktool.plugin.v1.Assignor"
)

// handler is one unary method on the plugin side: bytes in, bytes out.
type handler func(srv any, ctx context.Context, in []byte) ([]byte, error)

// method builds a grpc.MethodDesc whose request and response are
// BytesValue. A panic in the plugin's implementation becomes an error for
// the host instead of killing the plugin process.
func method(service, name string, h handler) grpc.MethodDesc {
	full := "/" + service + "/" + name
	return grpc.MethodDesc{
		MethodName: name,
		Handler: func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.BytesValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			call := func(ctx context.Context, req any) (resp any, err error) {
				defer func() {
					if p := recover(); p != nil {
						err = status.Errorf(codes.Internal, "plugin panicked in %s: %v\n%s", name, p, debug.Stack())
					}
				}()
				out, err := h(srv, ctx, req.(*wrapperspb.BytesValue).GetValue())
				if err != nil {
					return nil, status.Error(codes.Unknown, err.Error())
				}
				return wrapperspb.Bytes(out), nil
			}
			if icpt == nil {
				return call(ctx, in)
			}
			return icpt(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: full}, call)
		},
	}
}

// pluginError is an error the plugin itself returned (or a panic it
// survived), as opposed to a failure to reach it.
type pluginError struct{ msg string }

func (e *pluginError) Error() string { return e.msg }

// rpcClient calls one plugin service.
type rpcClient struct {
	conn    *grpc.ClientConn
	service string
	// exited is closed when the plugin process has exited.
	exited <-chan struct{}
}

// call invokes a method. An error the plugin returned comes back as a plain
// error with the plugin's message; transport failures keep their gRPC status.
func (c *rpcClient) call(ctx context.Context, name string, in []byte) ([]byte, error) {
	out := new(wrapperspb.BytesValue)
	err := c.conn.Invoke(ctx, "/"+c.service+"/"+name, wrapperspb.Bytes(in), out,
		grpc.MaxCallRecvMsgSize(maxMessage), grpc.MaxCallSendMsgSize(maxMessage))
	if err == nil {
		return out.GetValue(), nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return nil, fmt.Errorf("%s: %w", name, ctxErr)
	}
	st, ok := status.FromError(err)
	if !ok {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	switch st.Code() {
	case codes.Unknown, codes.Internal:
		return nil, fmt.Errorf("%s: %w", name, &pluginError{st.Message()})
	case codes.Unimplemented:
		return nil, fmt.Errorf("%s: the plugin does not serve %s", name, c.service)
	case codes.Unavailable:
		return nil, fmt.Errorf("%s: plugin connection lost (did it crash?): %s", name, st.Message())
	case codes.DeadlineExceeded:
		return nil, fmt.Errorf("%s: %w", name, context.DeadlineExceeded)
	}
	return nil, fmt.Errorf("%s: %s: %s", name, st.Code(), st.Message())
}

func (c *rpcClient) info(ctx context.Context) (wireInfo, error) {
	b, err := c.call(ctx, "Info", nil)
	if err != nil {
		return wireInfo{}, err
	}
	return decodeInfo(b)
}
