package broker

// DescribeClientQuotas, key 48, v0-v1 (Kafka 2.8).
//
// Lists the quotas stored for users, client ids and users+client ids that the
// filter matches, read from the store (so a change made through any broker is
// seen at once). Each component matches one entity type exactly (a name), its
// <default> entity, or any; strict leaves out entities with types the filter
// does not name. A bad filter is INVALID_REQUEST for the whole request.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	cq "github.com/ktoolhq/ktool/broker/quota"
)

func init() { register(48, 0, 1, handleDescribeClientQuotas) }

// Quota entity types on the wire.
const (
	quotaEntityUser     = "user"
	quotaEntityClientID = "client-id"
	quotaEntityIP       = "ip"
)

// The component match types of DescribeClientQuotas.
const (
	quotaMatchExact   = 0
	quotaMatchDefault = 1
	quotaMatchAny     = 2
)

type quotaFilterPart struct {
	typ   string
	match int8
	name  string
}

func parseQuotaFilter(cs []kmsg.DescribeClientQuotasRequestComponent) ([]quotaFilterPart, error) {
	seen := map[string]bool{}
	out := make([]quotaFilterPart, 0, len(cs))
	for _, c := range cs {
		switch c.EntityType {
		case quotaEntityUser, quotaEntityClientID, quotaEntityIP:
		default:
			return nil, fmt.Errorf("custom entity type %q not supported", c.EntityType)
		}
		if seen[c.EntityType] {
			return nil, fmt.Errorf("duplicate filter component entity type %q", c.EntityType)
		}
		seen[c.EntityType] = true
		p := quotaFilterPart{typ: c.EntityType, match: int8(c.MatchType)}
		switch p.match {
		case quotaMatchExact:
			if c.Match == nil {
				return nil, fmt.Errorf("exact match of %s with a null name", c.EntityType)
			}
			p.name = *c.Match
		case quotaMatchDefault, quotaMatchAny:
			if c.Match != nil {
				return nil, fmt.Errorf("%s: a name is only for an exact match", c.EntityType)
			}
		default:
			return nil, fmt.Errorf("unknown match type %d", c.MatchType)
		}
		out = append(out, p)
	}
	return out, nil
}

// quotaFilterMatches reports whether the filter matches e.
func quotaFilterMatches(f []quotaFilterPart, strict bool, e cq.Entity) bool {
	named := map[string]bool{}
	for _, p := range f {
		named[p.typ] = true
		var n cq.Name
		switch p.typ {
		case quotaEntityUser:
			n = e.User
		case quotaEntityClientID:
			n = e.Client
		}
		if !n.Set {
			return false
		}
		switch p.match {
		case quotaMatchExact:
			if n.Default || n.Name != p.name {
				return false
			}
		case quotaMatchDefault:
			if !n.Default {
				return false
			}
		}
	}
	if strict && ((e.User.Set && !named[quotaEntityUser]) || (e.Client.Set && !named[quotaEntityClientID])) {
		return false
	}
	return true
}

func handleDescribeClientQuotas(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	fail := func(e *kerr.Error, msg string) {
		resp.ErrorCode, resp.ErrorMessage = e.Code, &msg
		respond(protocol.Response{Msg: resp})
	}
	filter, err := parseQuotaFilter(req.Components)
	if err != nil {
		fail(kerr.InvalidRequest, err.Error())
		return
	}
	configs, err := b.readQuotaConfigs(rc.ctx)
	if err != nil {
		fail(kerr.UnknownServerError, err.Error())
		return
	}
	tbl := b.quotaTable(configs)
	for _, e := range tbl.Entities() {
		if !quotaFilterMatches(filter, req.Strict, e) {
			continue
		}
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		add := func(typ string, n cq.Name) {
			if !n.Set {
				return
			}
			ent := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ent.Type = typ
			if !n.Default {
				name := n.Name
				ent.Name = &name
			}
			entry.Entity = append(entry.Entity, ent)
		}
		add(quotaEntityUser, e.User)
		add(quotaEntityClientID, e.Client)
		v := tbl.Values(e)
		for k := cq.Kind(0); k < cq.NumKinds; k++ {
			if f, ok := v[k]; ok {
				val := kmsg.NewDescribeClientQuotasResponseEntryValue()
				val.Key, val.Value = k.String(), f
				entry.Values = append(entry.Values, val)
			}
		}
		resp.Entries = append(resp.Entries, entry)
	}
	respond(protocol.Response{Msg: resp})
}
