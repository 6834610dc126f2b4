// Package acl is the pure model of Kafka's ACLs: resource types, pattern
// types, operations and permissions with Kafka's wire codes and names,
// bindings and filters with the matching rules of Kafka's
// ResourcePatternFilter and AccessControlEntryFilter, and the decision of
// AclAuthorizer (super users, DENY over ALLOW, the `*` resource and `User:*`
// principal wildcards, LITERAL and PREFIXED patterns, implied operations,
// allow.everyone.if.no.acl.found).
//
// It imports nothing of the broker, so the broker's authorizer (broker/authz)
// and the operator CLI (`ktool acl check`, which computes a decision from the
// bindings DescribeAcls returns) share one implementation of the rules.
package acl
