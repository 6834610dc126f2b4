package acl

import (
	"slices"
	"sort"
	"strings"
)

// Principal is who asks, split as Kafka's KafkaPrincipal ("User", "alice").
type Principal struct{ Type, Name string }

// ParsePrincipal reads "Type:name".
func ParsePrincipal(s string) (Principal, error) {
	t, n, err := SplitPrincipal(s)
	return Principal{t, n}, err
}

func (p Principal) String() string { return p.Type + ":" + p.Name }

// Reason says why a decision went the way it did.
type Reason int

// Reasons, in the order AclAuthorizer tries them.
const (
	SuperUser  Reason = iota + 1 // the principal is in super.users
	DeniedBy                     // a DENY binding matched
	AllowedBy                    // an ALLOW binding matched and no DENY did
	NoACLAllow                   // no binding on the resource; allow.everyone.if.no.acl.found
	NoMatch                      // bindings exist on the resource, none allows the principal
	NoACLDeny                    // no binding on the resource and allow.everyone.if.no.acl.found is false
)

func (r Reason) String() string {
	switch r {
	case SuperUser:
		return "super user"
	case DeniedBy:
		return "denied by ACL"
	case AllowedBy:
		return "allowed by ACL"
	case NoACLAllow:
		return "no ACL on the resource and allow.everyone.if.no.acl.found=true"
	case NoMatch:
		return "no ACL allows it"
	case NoACLDeny:
		return "no ACL on the resource (allow.everyone.if.no.acl.found=false)"
	}
	return "unknown"
}

// Decision is an authorization result and what decided it. By points at the
// deciding binding (DeniedBy, AllowedBy) inside the Index; do not modify it.
type Decision struct {
	Allowed bool
	Reason  Reason
	By      *Binding
}

// compiled is a stored entry prepared for matching without allocation.
type compiled struct {
	ptype, pname string
	wildcard     bool // User:*
	host         string
	op           Operation
	perm         Permission
	b            *Binding
}

type typeIndex struct {
	literal    map[string][]compiled
	prefixed   map[string][]compiled
	prefixLens []int // distinct lengths of prefixed names, ascending
	count      int
}

// Index holds bindings for authorization: literal patterns by name, prefixed
// ones by prefix with the set of prefix lengths, so a decision costs a few
// map lookups and allocates nothing. It is immutable once built.
type Index struct {
	types       [ResourceDelegationToken + 1]typeIndex
	super       map[Principal]bool
	allowIfNone bool
	all         []Binding
}

// NewIndex builds an index over bindings (invalid ones are skipped), with the
// super users (as "User:name") and allow.everyone.if.no.acl.found.
func NewIndex(bindings []Binding, superUsers []string, allowIfNone bool) *Index {
	ix := &Index{super: map[Principal]bool{}, allowIfNone: allowIfNone}
	for _, s := range superUsers {
		if p, err := ParsePrincipal(strings.TrimSpace(s)); err == nil {
			ix.super[p] = true
		}
	}
	for _, b := range bindings {
		if b.Validate() == nil {
			ix.all = append(ix.all, b)
		}
	}
	for i := range ix.all {
		b := &ix.all[i]
		pt, pn, _ := SplitPrincipal(b.Principal)
		c := compiled{ptype: pt, pname: pn, wildcard: b.Principal == WildcardPrincipal, host: b.Host, op: b.Operation, perm: b.Permission, b: b}
		ti := &ix.types[b.Type]
		ti.count++
		if b.Pattern == PatternLiteral {
			if ti.literal == nil {
				ti.literal = map[string][]compiled{}
			}
			ti.literal[b.Name] = append(ti.literal[b.Name], c)
			continue
		}
		if ti.prefixed == nil {
			ti.prefixed = map[string][]compiled{}
		}
		ti.prefixed[b.Name] = append(ti.prefixed[b.Name], c)
		if !slices.Contains(ti.prefixLens, len(b.Name)) {
			ti.prefixLens = append(ti.prefixLens, len(b.Name))
		}
	}
	for i := range ix.types {
		sort.Ints(ix.types[i].prefixLens)
	}
	return ix
}

// Bindings returns every binding of the index (shared; do not modify).
func (ix *Index) Bindings() []Binding { return ix.all }

// IsSuper reports whether p is a super user.
func (ix *Index) IsSuper(p Principal) bool { return ix.super[p] }

// allowOps are the operations whose ALLOW grants op: READ, WRITE, DELETE and
// ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS.
func grants(granted, op Operation) bool {
	if granted == op || granted == OpAll {
		return true
	}
	switch op {
	case OpDescribe:
		return granted == OpRead || granted == OpWrite || granted == OpDelete || granted == OpAlter
	case OpDescribeConfigs:
		return granted == OpAlterConfigs
	}
	return false
}

func (c *compiled) matches(p Principal, host string) bool {
	return (c.wildcard || (c.ptype == p.Type && c.pname == p.Name)) && (c.host == Wildcard || c.host == host)
}

// Authorize decides whether p, connecting from host (an IP address), may do
// op on the resource of type rt named name, as Kafka's AclAuthorizer.
func (ix *Index) Authorize(p Principal, host string, op Operation, rt ResourceType, name string) Decision {
	if ix.super[p] {
		return Decision{Allowed: true, Reason: SuperUser}
	}
	if rt < 0 || int(rt) >= len(ix.types) {
		return Decision{Reason: NoMatch}
	}
	ti := &ix.types[rt]
	lit, star := ti.literal[name], ti.literal[Wildcard]
	if name == Wildcard {
		star = nil
	}
	found := len(lit) > 0 || len(star) > 0
	var allow *Binding
	check := func(cs []compiled) *Binding {
		for i := range cs {
			c := &cs[i]
			if !c.matches(p, host) {
				continue
			}
			if c.perm == PermDeny && (c.op == op || c.op == OpAll) {
				return c.b
			}
			if c.perm == PermAllow && allow == nil && grants(c.op, op) {
				allow = c.b
			}
		}
		return nil
	}
	if d := check(lit); d != nil {
		return Decision{Reason: DeniedBy, By: d}
	}
	if d := check(star); d != nil {
		return Decision{Reason: DeniedBy, By: d}
	}
	for _, l := range ti.prefixLens {
		if l > len(name) {
			break
		}
		cs := ti.prefixed[name[:l]]
		found = found || len(cs) > 0
		if d := check(cs); d != nil {
			return Decision{Reason: DeniedBy, By: d}
		}
	}
	switch {
	case allow != nil:
		return Decision{Allowed: true, Reason: AllowedBy, By: allow}
	case !found && ix.allowIfNone:
		return Decision{Allowed: true, Reason: NoACLAllow}
	case !found:
		return Decision{Reason: NoACLDeny}
	}
	return Decision{Reason: NoMatch}
}

// AuthorizeAny decides whether p may do op on at least one resource of type
// rt (Kafka's authorizeByResourceType, used by KIP-679: an idempotent
// producer may start with WRITE on any topic): allowed when an ALLOW binding
// of that type matches and no DENY on the literal `*` name does; with no
// binding of the type at all, allow.everyone.if.no.acl.found decides.
func (ix *Index) AuthorizeAny(p Principal, host string, op Operation, rt ResourceType) Decision {
	if ix.super[p] {
		return Decision{Allowed: true, Reason: SuperUser}
	}
	if rt < 0 || int(rt) >= len(ix.types) {
		return Decision{Reason: NoMatch}
	}
	ti := &ix.types[rt]
	for _, c := range ti.literal[Wildcard] {
		if c.matches(p, host) && c.perm == PermDeny && (c.op == op || c.op == OpAll) {
			return Decision{Reason: DeniedBy, By: c.b}
		}
	}
	for i := range ix.all {
		b := &ix.all[i]
		if b.Type != rt || b.Permission != PermAllow || !grants(b.Operation, op) {
			continue
		}
		pt, pn, _ := SplitPrincipal(b.Principal)
		c := compiled{ptype: pt, pname: pn, wildcard: b.Principal == WildcardPrincipal, host: b.Host}
		if c.matches(p, host) {
			return Decision{Allowed: true, Reason: AllowedBy, By: b}
		}
	}
	if ti.count == 0 && ix.allowIfNone {
		return Decision{Allowed: true, Reason: NoACLAllow}
	}
	return Decision{Reason: NoMatch}
}
