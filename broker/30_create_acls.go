package broker

// CreateAcls, key 30, v0-v2: stores bindings (v0 ones are LITERAL); needs
// ALTER on the cluster. Each creation is answered on its own: an invalid one
// with INVALID_REQUEST and its reason.

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/authz"
	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/acl"
)

func init() { register(30, 0, 2, handleCreateAcls) }

func handleCreateAcls(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	code, msg := int16(0), ""
	switch {
	case b.authz == nil:
		code, msg = kerr.SecurityDisabled.Code, noAuthorizer
	case !rc.allowedCluster(b, acl.OpAlter):
		code, msg = kerr.ClusterAuthorizationFailed.Code, "ALTER on the cluster is required to create ACLs"
	}
	if code != 0 {
		for range req.Creations {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode, res.ErrorMessage = code, &msg
			resp.Results = append(resp.Results, res)
		}
		respond(protocol.Response{Msg: resp})
		return
	}
	bs := make([]acl.Binding, len(req.Creations))
	for i, c := range req.Creations {
		bs[i] = acl.Binding{
			Resource: acl.Resource{Type: acl.ResourceType(c.ResourceType), Name: c.ResourceName, Pattern: acl.PatternType(c.ResourcePatternType)},
			Entry:    acl.Entry{Principal: c.Principal, Host: c.Host, Operation: acl.Operation(c.Operation), Permission: acl.Permission(c.PermissionType)},
		}
		if req.Version == 0 {
			bs[i].Pattern = acl.PatternLiteral
		}
	}
	errs := b.authz.Create(rc.ctx, b.Store(), bs)
	for _, err := range errs {
		res := kmsg.NewCreateACLsResponseResult()
		if err != nil {
			m := err.Error()
			res.ErrorCode, res.ErrorMessage = kerr.UnknownServerError.Code, &m
			if errors.Is(err, authz.ErrInvalid) {
				res.ErrorCode = kerr.InvalidRequest.Code
			}
		}
		resp.Results = append(resp.Results, res)
	}
	respond(protocol.Response{Msg: resp})
}
