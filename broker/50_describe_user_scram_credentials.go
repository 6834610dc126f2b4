package broker

// DescribeUserScramCredentials, key 50, v0.
//
// Lists the SCRAM mechanisms and iteration counts of users (null: every user
// with a credential), read from /config/users/<user>. Salts and keys are never
// sent. A named user without credentials is RESOURCE_NOT_FOUND; a user named
// twice is DUPLICATE_RESOURCE, as Kafka answers.

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

func init() { register(50, 0, 0, handleDescribeUserScramCredentials) }

func handleDescribeUserScramCredentials(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	result := func(user string, creds map[string]zkdata.ScramCredential) kmsg.DescribeUserSCRAMCredentialsResponseResult {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = user
		for _, mech := range zkdata.ScramMechanisms {
			if c, ok := creds[mech]; ok {
				ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				ci.Mechanism, ci.Iterations = zkdata.ScramMechanismType(mech), int32(c.Iterations)
				res.CredentialInfos = append(res.CredentialInfos, ci)
			}
		}
		return res
	}
	fail := func(user string, e *kerr.Error, msg string) {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User, res.ErrorCode, res.ErrorMessage = user, e.Code, &msg
		resp.Results = append(resp.Results, res)
	}
	if req.Users == nil || len(req.Users) == 0 {
		all, err := b.scramUsers(rc.ctx)
		if err != nil {
			resp.ErrorCode = kerr.UnknownServerError.Code
			msg := err.Error()
			resp.ErrorMessage = &msg
			respond(protocol.Response{Msg: resp})
			return
		}
		users := make([]string, 0, len(all))
		for u := range all {
			users = append(users, u)
		}
		sort.Strings(users)
		for _, u := range users {
			resp.Results = append(resp.Results, result(u, all[u]))
		}
		respond(protocol.Response{Msg: resp})
		return
	}
	count := map[string]int{}
	for _, u := range req.Users {
		count[u.Name]++
	}
	done := map[string]bool{}
	for _, u := range req.Users {
		name := u.Name
		if done[name] {
			continue
		}
		done[name] = true
		if count[name] > 1 {
			fail(name, kerr.DuplicateResource, "Cannot describe SCRAM credentials for the same user twice in a single request: "+name)
			continue
		}
		if err := zkdata.ValidUserName(name); err != nil {
			fail(name, kerr.ResourceNotFound, "Attempt to describe a user credential that does not exist: "+name)
			continue
		}
		creds, err := b.userCredentials(rc.ctx, name)
		if err != nil {
			fail(name, kerr.UnknownServerError, err.Error())
			continue
		}
		if len(creds) == 0 {
			fail(name, kerr.ResourceNotFound, "Attempt to describe a user credential that does not exist: "+name)
			continue
		}
		resp.Results = append(resp.Results, result(name, creds))
	}
	respond(protocol.Response{Msg: resp})
}
