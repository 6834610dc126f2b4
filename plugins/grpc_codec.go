package plugins

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/ktoolhq/ktool/plugins/codec"
)

// codecServer is the plugin side of a codec: the codec and the version it reports.
type codecServer struct {
	codec   codec.Codec
	version string
}

// codecServerAPI is the handler type of the codec service.
type codecServerAPI interface{ codecImpl() *codecServer }

func (s *codecServer) codecImpl() *codecServer { return s }

func codecServiceDesc() *grpc.ServiceDesc {
	impl := func(srv any) *codecServer { return srv.(codecServerAPI).codecImpl() }
	sections := func(decode func([]byte) ([][]byte, int, error), call func(c codec.Codec, ctx context.Context, in [][]byte, limit int) ([][]byte, error)) handler {
		return func(srv any, ctx context.Context, in []byte) ([]byte, error) {
			secs, limit, err := decode(in)
			if err != nil {
				return nil, err
			}
			c := impl(srv).codec
			out, err := call(c, ctx, secs, limit)
			if err != nil {
				return nil, err
			}
			if len(out) != len(secs) {
				return nil, fmt.Errorf("codec %s returned %d sections for %d", c.Name(), len(out), len(secs))
			}
			return encodeSections(out), nil
		}
	}
	return &grpc.ServiceDesc{
		ServiceName: codecService,
		HandlerType: (*codecServerAPI)(nil),
		Methods: []grpc.MethodDesc{
			method(codecService, "Info", func(srv any, _ context.Context, _ []byte) ([]byte, error) {
				s := impl(srv)
				return encodeInfo(wireInfo{Name: s.codec.Name(), Kind: KindCodec, Version: s.version, CodecID: s.codec.ID()})
			}),
			method(codecService, "Compress", sections(decodeCompressRequest, compress)),
			method(codecService, "Decompress", sections(decodeDecompressRequest, codec.Codec.Decompress)),
		},
	}
}

// codecPlugin binds the codec service to go-plugin; srv is set on the plugin side only.
type codecPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	srv *codecServer
}

func (p *codecPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	s.RegisterService(codecServiceDesc(), p.srv)
	return nil
}

func (p *codecPlugin) GRPCClient(ctx context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return &rpcClient{conn: conn, service: codecService, exited: ctx.Done()}, nil
}

// compress adapts Compress, which takes no limit, to the handler's call.
func compress(c codec.Codec, ctx context.Context, in [][]byte, _ int) ([][]byte, error) {
	return c.Compress(ctx, in)
}

func decodeCompressRequest(b []byte) ([][]byte, int, error) {
	secs, err := decodeSections(b)
	return secs, 0, err
}

// codecRPC sends an encoded request of n sections and decodes the n sections back.
func codecRPC(ctx context.Context, c *rpcClient, name string, req []byte, n int) ([][]byte, error) {
	b, err := c.call(ctx, name, req)
	if err != nil {
		return nil, err
	}
	out, err := decodeSections(b)
	if err != nil {
		return nil, err
	}
	if len(out) != n {
		return nil, fmt.Errorf("%s: plugin returned %d sections for %d", name, len(out), n)
	}
	return out, nil
}
