package plugins

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/ktoolhq/ktool/assignor"
)

// assignorServer is the plugin side of an assignor: the assignor and the version it reports.
type assignorServer struct {
	assignor assignor.Assignor
	version  string
}

// assignorServerAPI is the handler type of the assignor service.
type assignorServerAPI interface{ assignorImpl() *assignorServer }

func (s *assignorServer) assignorImpl() *assignorServer { return s }

func assignorServiceDesc() *grpc.ServiceDesc {
	impl := func(srv any) assignor.Assignor { return srv.(assignorServerAPI).assignorImpl().assignor }
	return &grpc.ServiceDesc{
		ServiceName: assignorService,
		HandlerType: (*assignorServerAPI)(nil),
		Methods: []grpc.MethodDesc{
			method(assignorService, "Info", func(srv any, _ context.Context, _ []byte) ([]byte, error) {
				s := srv.(assignorServerAPI).assignorImpl()
				return encodeInfo(wireInfo{Name: s.assignor.Name(), Kind: KindAssignor, Version: s.version, Cooperative: s.assignor.Cooperative()})
			}),
			method(assignorService, "UserData", func(srv any, _ context.Context, in []byte) ([]byte, error) {
				owned, gen, err := decodeUserDataRequest(in)
				if err != nil {
					return nil, err
				}
				var w writer
				w.nullableBytes(impl(srv).UserData(owned, gen))
				return w.b, nil
			}),
			method(assignorService, "Assign", func(srv any, _ context.Context, in []byte) ([]byte, error) {
				members, partitions, err := decodeAssignRequest(in)
				if err != nil {
					return nil, err
				}
				a, err := impl(srv).Assign(members, partitions)
				if err != nil {
					return nil, err
				}
				return encodeAssignment(a), nil
			}),
		},
	}
}

// assignorPlugin binds the assignor service to go-plugin; srv is set on the plugin side only.
type assignorPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	srv *assignorServer
}

func (p *assignorPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	s.RegisterService(assignorServiceDesc(), p.srv)
	return nil
}

func (p *assignorPlugin) GRPCClient(ctx context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return &rpcClient{conn: conn, service: assignorService, exited: ctx.Done()}, nil
}

func userDataRPC(ctx context.Context, c *rpcClient, owned map[string][]int32, generation int32) ([]byte, error) {
	b, err := c.call(ctx, "UserData", encodeUserDataRequest(owned, generation))
	if err != nil {
		return nil, err
	}
	r := reader{b: b}
	ud := r.nullableBytes()
	return ud, r.done("user data")
}

func assignRPC(ctx context.Context, c *rpcClient, members []assignor.Member, partitions map[string]int32) (assignor.Assignment, error) {
	b, err := c.call(ctx, "Assign", encodeAssignRequest(members, partitions))
	if err != nil {
		return nil, err
	}
	return decodeAssignment(b)
}
