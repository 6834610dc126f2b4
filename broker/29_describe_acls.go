package broker

// DescribeAcls, key 29, v0-v2: the cached bindings a filter selects; needs
// DESCRIBE on the cluster. Without an authorizer, SECURITY_DISABLED ("No
// Authorizer is configured on the broker"), as Kafka answers.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/acl"
)

const noAuthorizer = "No Authorizer is configured on the broker"

func init() { register(29, 0, 2, handleDescribeAcls) }

func handleDescribeAcls(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	fail := func(code int16, msg string) {
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		respond(protocol.Response{Msg: resp})
	}
	switch {
	case b.authz == nil:
		fail(kerr.SecurityDisabled.Code, noAuthorizer)
		return
	case !rc.allowedCluster(b, acl.OpDescribe):
		fail(kerr.ClusterAuthorizationFailed.Code, "DESCRIBE on the cluster is required to describe ACLs")
		return
	}
	f := acl.Filter{
		Type: acl.ResourceType(req.ResourceType), Name: req.ResourceName, Pattern: acl.PatternType(req.ResourcePatternType),
		Principal: req.Principal, Host: req.Host, Operation: acl.Operation(req.Operation), Permission: acl.Permission(req.PermissionType),
	}
	if req.Version == 0 {
		f.Pattern = acl.PatternLiteral
	}
	if err := f.Validate(); err != nil {
		fail(kerr.InvalidRequest.Code, err.Error())
		return
	}
	var cur *kmsg.DescribeACLsResponseResource
	for _, bd := range b.authz.Describe(f) {
		if cur == nil || cur.ResourceType != kmsg.ACLResourceType(bd.Type) || cur.ResourceName != bd.Name || cur.ResourcePatternType != kmsg.ACLResourcePatternType(bd.Pattern) {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName, res.ResourcePatternType = kmsg.ACLResourceType(bd.Type), bd.Name, kmsg.ACLResourcePatternType(bd.Pattern)
			resp.Resources = append(resp.Resources, res)
			cur = &resp.Resources[len(resp.Resources)-1]
		}
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host, e.Operation, e.PermissionType = bd.Principal, bd.Host, kmsg.ACLOperation(bd.Operation), kmsg.ACLPermissionType(bd.Permission)
		cur.ACLs = append(cur.ACLs, e)
	}
	respond(protocol.Response{Msg: resp})
}
