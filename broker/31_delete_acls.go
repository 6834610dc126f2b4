package broker

// DeleteAcls, key 31, v0-v2: removes the stored bindings each filter selects
// and returns them; needs ALTER on the cluster.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/acl"
)

func init() { register(31, 0, 2, handleDeleteAcls) }

func handleDeleteAcls(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	code, msg := int16(0), ""
	switch {
	case b.authz == nil:
		code, msg = kerr.SecurityDisabled.Code, noAuthorizer
	case !rc.allowedCluster(b, acl.OpAlter):
		code, msg = kerr.ClusterAuthorizationFailed.Code, "ALTER on the cluster is required to delete ACLs"
	}
	fs := make([]acl.Filter, len(req.Filters))
	bad := make([]error, len(req.Filters))
	for i, f := range req.Filters {
		fs[i] = acl.Filter{
			Type: acl.ResourceType(f.ResourceType), Name: f.ResourceName, Pattern: acl.PatternType(f.ResourcePatternType),
			Principal: f.Principal, Host: f.Host, Operation: acl.Operation(f.Operation), Permission: acl.Permission(f.PermissionType),
		}
		if req.Version == 0 {
			fs[i].Pattern = acl.PatternLiteral
		}
		bad[i] = fs[i].Validate()
	}
	var results []deleteOutcome
	if code == 0 {
		var valid []acl.Filter
		for i := range fs {
			if bad[i] == nil {
				valid = append(valid, fs[i])
			}
		}
		got := b.authz.Delete(rc.ctx, b.Store(), valid)
		j := 0
		for i := range fs {
			if bad[i] != nil {
				results = append(results, deleteOutcome{code: kerr.InvalidRequest.Code, msg: bad[i].Error()})
				continue
			}
			o := deleteOutcome{deleted: got[j].Deleted}
			if got[j].Err != nil {
				o.code, o.msg = kerr.UnknownServerError.Code, got[j].Err.Error()
			}
			results = append(results, o)
			j++
		}
	}
	for i := range req.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		if code != 0 {
			res.ErrorCode, res.ErrorMessage = code, &msg
			resp.Results = append(resp.Results, res)
			continue
		}
		o := results[i]
		if o.code != 0 {
			m := o.msg
			res.ErrorCode, res.ErrorMessage = o.code, &m
		}
		for _, bd := range o.deleted {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = kmsg.ACLResourceType(bd.Type), bd.Name, kmsg.ACLResourcePatternType(bd.Pattern)
			m.Principal, m.Host, m.Operation, m.PermissionType = bd.Principal, bd.Host, kmsg.ACLOperation(bd.Operation), kmsg.ACLPermissionType(bd.Permission)
			res.MatchingACLs = append(res.MatchingACLs, m)
		}
		resp.Results = append(resp.Results, res)
	}
	respond(protocol.Response{Msg: resp})
}

type deleteOutcome struct {
	code    int16
	msg     string
	deleted []acl.Binding
}
