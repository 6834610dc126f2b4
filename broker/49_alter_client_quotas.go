package broker

// AlterClientQuotas, key 49, v0-v1 (Kafka 2.8).
//
// Sets or removes quotas of a user, a client id or a user+client id (<default>
// when the name is null), in their znode with a /config/changes notification,
// so every broker applies them without restart. Each entry succeeds or fails on
// its own: an unknown entity type, a type named twice, an unknown key, a key
// named twice, a byte rate that is not a whole number or a value that is not
// positive is INVALID_REQUEST, and nothing of that entry is written.
// validate_only checks without writing. ip entities (connection_creation_rate)
// are not served: INVALID_REQUEST.

import (
	"fmt"
	"math"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	cq "github.com/ktoolhq/ktool/broker/quota"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

func init() { register(49, 0, 1, handleAlterClientQuotas) }

func parseAlterQuotaEntity(es []kmsg.AlterClientQuotasRequestEntryEntity) (cq.Entity, error) {
	var e cq.Entity
	for _, c := range es {
		n := cq.DefaultName()
		if c.Name != nil {
			if err := zkdata.ValidUserName(*c.Name); err != nil {
				return e, err
			}
			n = cq.Named(*c.Name)
		}
		var slot *cq.Name
		switch c.Type {
		case quotaEntityUser:
			slot = &e.User
		case quotaEntityClientID:
			slot = &e.Client
		case quotaEntityIP:
			return e, fmt.Errorf("ip quotas are not supported")
		default:
			return e, fmt.Errorf("unknown entity type %q", c.Type)
		}
		if slot.Set {
			return e, fmt.Errorf("entity type %q named twice", c.Type)
		}
		*slot = n
	}
	if !e.Valid() {
		return e, fmt.Errorf("empty entity")
	}
	return e, nil
}

// quotaOp is one validated change: a value to set, or a removal.
type quotaOp struct {
	key    string
	value  string
	remove bool
}

func parseQuotaOps(ops []kmsg.AlterClientQuotasRequestEntryOp) ([]quotaOp, error) {
	seen := map[string]bool{}
	out := make([]quotaOp, 0, len(ops))
	for _, op := range ops {
		k, ok := cq.KindOf(op.Key)
		if !ok {
			return nil, fmt.Errorf("invalid configuration key %s", op.Key)
		}
		if seen[op.Key] {
			return nil, fmt.Errorf("configuration key %s named twice", op.Key)
		}
		seen[op.Key] = true
		if op.Remove {
			out = append(out, quotaOp{key: op.Key, remove: true})
			continue
		}
		v := op.Value
		if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			return nil, fmt.Errorf("%s must be positive", op.Key)
		}
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if k != cq.Request {
			if v != math.Trunc(v) || v > math.MaxInt64 {
				return nil, fmt.Errorf("%s must be a Long value", op.Key)
			}
			s = strconv.FormatInt(int64(v), 10)
		}
		out = append(out, quotaOp{key: op.Key, value: s})
	}
	return out, nil
}

func handleAlterClientQuotas(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	for _, entry := range req.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		for _, c := range entry.Entity {
			ent := kmsg.NewAlterClientQuotasResponseEntryEntity()
			ent.Type, ent.Name = c.Type, c.Name
			re.Entity = append(re.Entity, ent)
		}
		fail := func(e *kerr.Error, err error) {
			msg := err.Error()
			re.ErrorCode, re.ErrorMessage = e.Code, &msg
		}
		e, err := parseAlterQuotaEntity(entry.Entity)
		if err != nil {
			fail(kerr.InvalidRequest, err)
			resp.Entries = append(resp.Entries, re)
			continue
		}
		ops, err := parseQuotaOps(entry.Ops)
		if err != nil {
			fail(kerr.InvalidRequest, err)
			resp.Entries = append(resp.Entries, re)
			continue
		}
		if !req.ValidateOnly && len(ops) > 0 {
			err := b.updateQuotaConfig(rc.ctx, e, func(m map[string]string) {
				for _, op := range ops {
					if op.remove {
						delete(m, op.key)
					} else {
						m[op.key] = op.value
					}
				}
			})
			if err != nil {
				fail(kerr.UnknownServerError, err)
			}
		}
		resp.Entries = append(resp.Entries, re)
	}
	respond(protocol.Response{Msg: resp})
}
