package quota

import (
	"fmt"
	"sort"
	"strconv"
)

// Kind is what a quota limits.
type Kind int

// The kinds of client quota.
const (
	Produce Kind = iota // producer_byte_rate: bytes appended per second
	Fetch               // consumer_byte_rate: bytes fetched per second
	Request             // request_percentage: percent of one request thread's time
	NumKinds
)

// Keys are the config keys of the kinds, as Kafka names them.
var Keys = [NumKinds]string{"producer_byte_rate", "consumer_byte_rate", "request_percentage"}

func (k Kind) String() string { return Keys[k] }

// KindOf returns the kind configured by key.
func KindOf(key string) (Kind, bool) {
	for k, s := range Keys {
		if s == key {
			return Kind(k), true
		}
	}
	return 0, false
}

// Name is one component of an entity: unset, the <default> entity, or a name.
type Name struct {
	Set     bool
	Default bool
	Name    string
}

// Named is the component called n.
func Named(n string) Name { return Name{Set: true, Name: n} }

// DefaultName is the <default> component.
func DefaultName() Name { return Name{Set: true, Default: true} }

func (n Name) String() string {
	switch {
	case !n.Set:
		return ""
	case n.Default:
		return "<default>"
	}
	return n.Name
}

// Entity is what a quota is configured on: a user, a client id, or both.
type Entity struct {
	User   Name
	Client Name
}

func (e Entity) String() string {
	switch {
	case e.User.Set && e.Client.Set:
		return "user " + e.User.String() + " client-id " + e.Client.String()
	case e.User.Set:
		return "user " + e.User.String()
	}
	return "client-id " + e.Client.String()
}

// Valid reports whether the entity names at least a user or a client id.
func (e Entity) Valid() bool { return e.User.Set || e.Client.Set }

// Values are the quotas configured on one entity.
type Values map[Kind]float64

// ParseValues reads the quota keys of a stored config (other keys, such as
// SCRAM credentials, are not quotas and are skipped). A value that is not a
// positive number is an error.
func ParseValues(config map[string]string) (Values, error) {
	v := Values{}
	for key, s := range config {
		k, ok := KindOf(key)
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || !(f > 0) {
			return nil, fmt.Errorf("%s=%q: want a positive number", key, s)
		}
		v[k] = f
	}
	return v, nil
}

// Table is an immutable set of configured quotas.
type Table struct {
	m map[Entity]Values
	// any[k] says some entity sets kind k, so a request with none is not looked up.
	any [NumKinds]bool
}

// NewTable builds a table from entity configs; entities without quota values are left out.
func NewTable(m map[Entity]Values) *Table {
	t := &Table{m: map[Entity]Values{}}
	for e, v := range m {
		if len(v) == 0 || !e.Valid() {
			continue
		}
		c := Values{}
		for k, f := range v {
			c[k] = f
			t.any[k] = true
		}
		t.m[e] = c
	}
	return t
}

// Empty reports whether no quota is configured.
func (t *Table) Empty() bool { return t == nil || len(t.m) == 0 }

// Has reports whether some entity sets kind k.
func (t *Table) Has(k Kind) bool { return t != nil && t.any[k] }

// Entities lists the configured entities in a stable order.
func (t *Table) Entities() []Entity {
	out := make([]Entity, 0, len(t.m))
	for e := range t.m {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// Values returns a copy of the quotas set on e.
func (t *Table) Values(e Entity) Values {
	v := Values{}
	for k, f := range t.m[e] {
		v[k] = f
	}
	return v
}

// Tags identify the rate a request is measured against: requests with the same
// tags share one rate. An empty component is not part of the key (a user quota
// is shared by all of the user's client ids).
type Tags struct {
	Kind   Kind
	User   string
	Client string
}

// Resolve finds the quota of kind k that applies to user and clientID, in the
// precedence order of KIP-55 (the first configured wins):
//
//	/config/users/<user>/clients/<client-id>
//	/config/users/<user>/clients/<default>
//	/config/users/<user>
//	/config/users/<default>/clients/<client-id>
//	/config/users/<default>/clients/<default>
//	/config/users/<default>
//	/config/clients/<client-id>
//	/config/clients/<default>
//
// It returns the bound, the tags of the rate it applies to, and whether any applied.
func (t *Table) Resolve(k Kind, user, clientID string) (float64, Tags, bool) {
	if !t.Has(k) {
		return 0, Tags{}, false
	}
	u, c, du, dc := Named(user), Named(clientID), DefaultName(), DefaultName()
	levels := [...]struct {
		e        Entity
		withUser bool
		withCli  bool
	}{
		{Entity{u, c}, true, true},
		{Entity{u, dc}, true, true},
		{Entity{User: u}, true, false},
		{Entity{du, c}, true, true},
		{Entity{du, dc}, true, true},
		{Entity{User: du}, true, false},
		{Entity{Client: c}, false, true},
		{Entity{Client: dc}, false, true},
	}
	for _, l := range levels {
		v, ok := t.m[l.e][k]
		if !ok {
			continue
		}
		tags := Tags{Kind: k}
		if l.withUser {
			tags.User = user
		}
		if l.withCli {
			tags.Client = clientID
		}
		return v, tags, true
	}
	return 0, Tags{}, false
}
