package acl

import (
	"fmt"
	"strings"
)

// ResourceType is Kafka's resource type, with its wire code.
type ResourceType int8

// Resource types (org.apache.kafka.common.resource.ResourceType).
const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
)

// ClusterName is the name of the one cluster resource.
const ClusterName = "kafka-cluster"

// Wildcard is the resource name, host and principal name matching all.
const Wildcard = "*"

// WildcardPrincipal matches every user.
const WildcardPrincipal = "User:*"

// StoredResourceTypes are the types ACLs can be stored for, in Kafka's order.
var StoredResourceTypes = []ResourceType{ResourceTopic, ResourceGroup, ResourceCluster, ResourceTransactionalID, ResourceDelegationToken}

var resourceNames = map[ResourceType]string{
	ResourceUnknown: "Unknown", ResourceAny: "Any", ResourceTopic: "Topic", ResourceGroup: "Group",
	ResourceCluster: "Cluster", ResourceTransactionalID: "TransactionalId", ResourceDelegationToken: "DelegationToken",
}

// String is Kafka's name, as in znode paths ("Topic", "TransactionalId").
func (t ResourceType) String() string {
	if s, ok := resourceNames[t]; ok {
		return s
	}
	return fmt.Sprintf("ResourceType(%d)", int8(t))
}

// Known reports whether t is one of Kafka's codes.
func (t ResourceType) Known() bool { _, ok := resourceNames[t]; return ok && t != ResourceUnknown }

// ParseResourceType reads a resource type by name, in any case, with or
// without underscores ("topic", "TRANSACTIONAL_ID", "TransactionalId").
func ParseResourceType(s string) (ResourceType, error) {
	if t, ok := resourceByName[normalize(s)]; ok {
		return t, nil
	}
	return ResourceUnknown, fmt.Errorf("unknown resource type %q (Topic, Group, Cluster, TransactionalId, DelegationToken, Any)", s)
}

// PatternType is how a binding's resource name matches.
type PatternType int8

// Pattern types (org.apache.kafka.common.resource.PatternType).
const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1
	PatternMatch    PatternType = 2
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

var patternNames = map[PatternType]string{
	PatternUnknown: "UNKNOWN", PatternAny: "ANY", PatternMatch: "MATCH", PatternLiteral: "LITERAL", PatternPrefixed: "PREFIXED",
}

func (p PatternType) String() string {
	if s, ok := patternNames[p]; ok {
		return s
	}
	return fmt.Sprintf("PatternType(%d)", int8(p))
}

// ParsePatternType reads a pattern type by name, in any case.
func ParsePatternType(s string) (PatternType, error) {
	if p, ok := patternByName[normalize(s)]; ok {
		return p, nil
	}
	return PatternUnknown, fmt.Errorf("unknown resource pattern type %q (literal, prefixed, match, any)", s)
}

// Operation is an ACL operation, with its wire code.
type Operation int8

// Operations (org.apache.kafka.common.acl.AclOperation).
const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
)

var opNames = map[Operation]string{
	OpUnknown: "Unknown", OpAny: "Any", OpAll: "All", OpRead: "Read", OpWrite: "Write", OpCreate: "Create",
	OpDelete: "Delete", OpAlter: "Alter", OpDescribe: "Describe", OpClusterAction: "ClusterAction",
	OpDescribeConfigs: "DescribeConfigs", OpAlterConfigs: "AlterConfigs", OpIdempotentWrite: "IdempotentWrite",
}

// String is the name Kafka stores in ACL JSON ("Read", "IdempotentWrite").
func (o Operation) String() string {
	if s, ok := opNames[o]; ok {
		return s
	}
	return fmt.Sprintf("Operation(%d)", int8(o))
}

// ParseOperation reads an operation by name, in any case, with or without
// underscores or dashes ("read", "IDEMPOTENT_WRITE", "DescribeConfigs").
func ParseOperation(s string) (Operation, error) {
	if o, ok := opByName[normalize(s)]; ok {
		return o, nil
	}
	return OpUnknown, fmt.Errorf("unknown operation %q", s)
}

// Permission is ALLOW or DENY.
type Permission int8

// Permission types (org.apache.kafka.common.acl.AclPermissionType).
const (
	PermUnknown Permission = 0
	PermAny     Permission = 1
	PermDeny    Permission = 2
	PermAllow   Permission = 3
)

var permNames = map[Permission]string{PermUnknown: "Unknown", PermAny: "Any", PermDeny: "Deny", PermAllow: "Allow"}

// String is the name Kafka stores in ACL JSON ("Allow", "Deny").
func (p Permission) String() string {
	if s, ok := permNames[p]; ok {
		return s
	}
	return fmt.Sprintf("Permission(%d)", int8(p))
}

// ParsePermission reads a permission by name, in any case.
func ParsePermission(s string) (Permission, error) {
	if p, ok := permByName[normalize(s)]; ok {
		return p, nil
	}
	return PermUnknown, fmt.Errorf("unknown permission type %q (allow, deny)", s)
}

// normalize lowers s and drops '_', '-' and ' ', so "IDEMPOTENT_WRITE",
// "idempotent-write" and "IdempotentWrite" compare equal.
func normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_' || c == '-' || c == ' ':
		case 'A' <= c && c <= 'Z':
			b.WriteByte(c + 'a' - 'A')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// byName indexes names by their normalized form, without the unknown value.
func byName[T comparable](names map[T]string, unknown T) map[string]T {
	m := make(map[string]T, len(names))
	for v, n := range names {
		if v != unknown {
			m[normalize(n)] = v
		}
	}
	return m
}

var (
	resourceByName = byName(resourceNames, ResourceUnknown)
	patternByName  = byName(patternNames, PatternUnknown)
	opByName       = byName(opNames, OpUnknown)
	permByName     = byName(permNames, PermUnknown)
)

// Resource is a resource pattern: a type, a name and how the name matches.
type Resource struct {
	Type    ResourceType
	Name    string
	Pattern PatternType
}

// Entry is one access control entry of a resource pattern.
type Entry struct {
	Principal  string // "User:alice" or "User:*"
	Host       string // an IP address or "*"
	Operation  Operation
	Permission Permission
}

// Binding is an ACL: a resource pattern and an entry.
type Binding struct {
	Resource
	Entry
}

func (b Binding) String() string {
	return fmt.Sprintf("%s %s on %s %s:%s from host %s (%s)", b.Permission, b.Principal, b.Operation, b.Type, b.Name, b.Host, b.Pattern)
}

// Validate checks a binding that is to be stored, with Kafka's rules.
func (b Binding) Validate() error {
	switch {
	case !b.Type.Known() || b.Type == ResourceAny:
		return fmt.Errorf("invalid resource type %s", b.Type)
	case b.Pattern != PatternLiteral && b.Pattern != PatternPrefixed:
		return fmt.Errorf("invalid resource pattern type %s (LITERAL or PREFIXED)", b.Pattern)
	case b.Name == "":
		return fmt.Errorf("empty resource name")
	case b.Type == ResourceCluster && b.Name != ClusterName:
		return fmt.Errorf("the cluster resource is named %s, not %q", ClusterName, b.Name)
	case b.Operation == OpAny || b.Operation == OpUnknown || opNames[b.Operation] == "":
		return fmt.Errorf("invalid operation %s", b.Operation)
	case b.Permission != PermAllow && b.Permission != PermDeny:
		return fmt.Errorf("invalid permission type %s", b.Permission)
	case b.Host == "":
		return fmt.Errorf("empty host (use * for every host)")
	}
	if _, _, err := SplitPrincipal(b.Principal); err != nil {
		return err
	}
	return nil
}

// SplitPrincipal splits "Type:name" at its first colon.
func SplitPrincipal(p string) (typ, name string, err error) {
	i := strings.IndexByte(p, ':')
	if i <= 0 || i == len(p)-1 {
		return "", "", fmt.Errorf("principal %q is not Type:name (e.g. User:alice)", p)
	}
	return p[:i], p[i+1:], nil
}

// Filter selects bindings, as DescribeAcls and DeleteAcls filters do. A nil
// Name, Principal or Host matches any.
type Filter struct {
	Type       ResourceType
	Name       *string
	Pattern    PatternType
	Principal  *string
	Host       *string
	Operation  Operation
	Permission Permission
}

// Validate rejects filters Kafka rejects (unknown codes).
func (f Filter) Validate() error {
	switch {
	case !f.Type.Known():
		return fmt.Errorf("invalid resource type %s", f.Type)
	case f.Pattern < PatternAny || f.Pattern > PatternPrefixed:
		return fmt.Errorf("invalid resource pattern type %s", f.Pattern)
	case f.Operation == OpUnknown || opNames[f.Operation] == "":
		return fmt.Errorf("invalid operation %s", f.Operation)
	case f.Permission < PermAny || f.Permission > PermAllow:
		return fmt.Errorf("invalid permission type %s", f.Permission)
	}
	return nil
}

// MatchesResource reports whether the filter's pattern part selects r, as
// Kafka's ResourcePatternFilter.matches: ANY and LITERAL/PREFIXED compare
// names exactly; MATCH selects every pattern that would apply to a resource
// of that name (the literal name, the literal `*`, every prefix).
func (f Filter) MatchesResource(r Resource) bool {
	if f.Type != ResourceAny && f.Type != r.Type {
		return false
	}
	if f.Pattern != PatternAny && f.Pattern != PatternMatch && f.Pattern != r.Pattern {
		return false
	}
	if f.Name == nil {
		return true
	}
	if f.Pattern == PatternAny || f.Pattern == r.Pattern {
		return *f.Name == r.Name
	}
	switch r.Pattern {
	case PatternLiteral:
		return *f.Name == r.Name || r.Name == Wildcard
	case PatternPrefixed:
		return strings.HasPrefix(*f.Name, r.Name)
	}
	return false
}

// MatchesEntry reports whether the filter's entry part selects e.
func (f Filter) MatchesEntry(e Entry) bool {
	return (f.Principal == nil || *f.Principal == e.Principal) &&
		(f.Host == nil || *f.Host == e.Host) &&
		(f.Operation == OpAny || f.Operation == e.Operation) &&
		(f.Permission == PermAny || f.Permission == e.Permission)
}

// Matches reports whether the filter selects b.
func (f Filter) Matches(b Binding) bool {
	return f.MatchesResource(b.Resource) && f.MatchesEntry(b.Entry)
}

// supportedOps are the operations an ACL on each resource type may name
// (Kafka's AclEntry.supportedOperations), ALL aside.
var supportedOps = map[ResourceType][]Operation{
	ResourceTopic:           {OpRead, OpWrite, OpCreate, OpDescribe, OpDelete, OpAlter, OpDescribeConfigs, OpAlterConfigs},
	ResourceGroup:           {OpRead, OpDescribe, OpDelete},
	ResourceCluster:         {OpCreate, OpClusterAction, OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite, OpAlter, OpDescribe},
	ResourceTransactionalID: {OpDescribe, OpWrite},
	ResourceDelegationToken: {OpDescribe},
}

// SupportedOperations are the operations that apply to resources of type rt.
func SupportedOperations(rt ResourceType) []Operation { return supportedOps[rt] }

// OperationBits is the 32-bit field of authorized operations that Metadata,
// DescribeCluster and DescribeGroups answer (KIP-430): bit n set when the
// operation with code n is in ops.
func OperationBits(ops []Operation) int32 {
	var bits int32
	for _, op := range ops {
		if op > 0 && op < 32 {
			bits |= 1 << op
		}
	}
	return bits
}
