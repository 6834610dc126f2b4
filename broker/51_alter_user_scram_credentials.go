package broker

// AlterUserScramCredentials, key 51, v0.
//
// Upserts and deletes SCRAM credentials in /config/users/<user> (conditional
// writes, then a /config/changes notification), as kafka-configs.sh
// --alter --add-config 'SCRAM-SHA-256=[...]' does. An upsertion carries the
// salt and the salted password; the broker derives StoredKey and ServerKey
// and never sees the password. Kafka's checks: an unknown mechanism is
// UNSUPPORTED_SASL_MECHANISM; an empty user, an empty salt or salted password,
// or iterations outside 4096..16384 are UNACCEPTABLE_CREDENTIAL; deleting a
// credential that does not exist is RESOURCE_NOT_FOUND; a user with two
// alterations of one mechanism is DUPLICATE_RESOURCE.

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

func init() { register(51, 0, 0, handleAlterUserScramCredentials) }

type scramChange struct {
	mechanism string
	delete    bool
	cred      zkdata.ScramCredential
}

func handleAlterUserScramCredentials(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	var order []string
	changes := map[string][]scramChange{}
	failed := map[string]*kmsg.AlterUserSCRAMCredentialsResponseResult{}
	fail := func(user string, e *kerr.Error, msg string) {
		if _, ok := failed[user]; ok {
			return
		}
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User, res.ErrorCode, res.ErrorMessage = user, e.Code, &msg
		failed[user] = &res
	}
	add := func(user string, c scramChange) {
		if _, ok := changes[user]; !ok {
			order = append(order, user)
		}
		for _, prev := range changes[user] {
			if prev.mechanism == c.mechanism {
				fail(user, kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
			}
		}
		changes[user] = append(changes[user], c)
	}
	for _, d := range req.Deletions {
		mech := zkdata.ScramMechanismName(d.Mechanism)
		add(d.Name, scramChange{mechanism: mech, delete: true})
		switch {
		case d.Name == "" || zkdata.ValidUserName(d.Name) != nil:
			fail(d.Name, kerr.UnacceptableCredential, "Username must not be empty")
		case mech == "":
			fail(d.Name, kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
		}
	}
	for _, u := range req.Upsertions {
		mech := zkdata.ScramMechanismName(u.Mechanism)
		var cred zkdata.ScramCredential
		var err error
		switch {
		case u.Name == "" || zkdata.ValidUserName(u.Name) != nil:
			fail(u.Name, kerr.UnacceptableCredential, "Username must not be empty")
		case mech == "":
			fail(u.Name, kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
		case u.Iterations < zkdata.ScramMinIterations:
			fail(u.Name, kerr.UnacceptableCredential, "Too few iterations")
		case u.Iterations > zkdata.ScramMaxIterations:
			fail(u.Name, kerr.UnacceptableCredential, "Too many iterations")
		case len(u.Salt) == 0:
			fail(u.Name, kerr.UnacceptableCredential, "Salt must not be empty")
		case len(u.SaltedPassword) == 0:
			fail(u.Name, kerr.UnacceptableCredential, "Salted password must not be empty")
		default:
			if cred, err = zkdata.ScramFromSalted(mech, u.SaltedPassword, u.Salt, int(u.Iterations)); err != nil {
				fail(u.Name, kerr.UnacceptableCredential, err.Error())
			}
		}
		add(u.Name, scramChange{mechanism: mech, cred: cred})
	}
	for _, user := range order {
		if res, ok := failed[user]; ok {
			resp.Results = append(resp.Results, *res)
			continue
		}
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = user
		err := b.updateUserConfig(rc.ctx, user, func(m map[string]string) error {
			for _, c := range changes[user] {
				if c.delete {
					if _, ok := m[c.mechanism]; !ok {
						return kerr.ResourceNotFound
					}
					delete(m, c.mechanism)
					continue
				}
				m[c.mechanism] = zkdata.EncodeScramCredential(c.cred)
			}
			return nil
		})
		if err != nil {
			res.ErrorCode = errorCode(err)
			msg := err.Error()
			if errors.Is(err, kerr.ResourceNotFound) {
				msg = "Attempt to delete a user credential that does not exist"
			}
			res.ErrorMessage = &msg
		}
		resp.Results = append(resp.Results, res)
	}
	respond(protocol.Response{Msg: resp})
}
