package broker

// DescribeAcls, key 29, v0-v2; CreateAcls, key 30, v0-v2; DeleteAcls, key 31, v0-v2.
//
// ktool has no authorizer. Like a Kafka broker without one, it serves the ACL
// APIs and answers each with SECURITY_DISABLED ("No Authorizer is configured on
// the broker"), so admin clients get a clear answer instead of an unsupported API.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
)

const noAuthorizer = "No Authorizer is configured on the broker"

func init() {
	register(29, 0, 2, handleDescribeAcls)
	register(30, 0, 2, handleCreateAcls)
	register(31, 0, 2, handleDeleteAcls)
}

func handleDescribeAcls(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	resp := r.ResponseKind().(*kmsg.DescribeACLsResponse)
	resp.ErrorCode = kerr.SecurityDisabled.Code
	msg := noAuthorizer
	resp.ErrorMessage = &msg
	respond(protocol.Response{Msg: resp})
}

func handleCreateAcls(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	for range req.Creations {
		res := kmsg.NewCreateACLsResponseResult()
		res.ErrorCode = kerr.SecurityDisabled.Code
		msg := noAuthorizer
		res.ErrorMessage = &msg
		resp.Results = append(resp.Results, res)
	}
	respond(protocol.Response{Msg: resp})
}

func handleDeleteAcls(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	for range req.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		res.ErrorCode = kerr.SecurityDisabled.Code
		msg := noAuthorizer
		res.ErrorMessage = &msg
		resp.Results = append(resp.Results, res)
	}
	respond(protocol.Response{Msg: resp})
}
