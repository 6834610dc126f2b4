// Package authz is the broker's authorizer, Kafka's AclAuthorizer in
// behaviour: ACLs kept in the coordination store with Kafka's layout and JSON
// (/kafka-acl/<ResourceType>/<name> for LITERAL patterns,
// /kafka-acl-extended/prefixed/<ResourceType>/<name> for PREFIXED ones, each
// {"version":1,"acls":[{"principal","permissionType","operation","host"}]}),
// a change notification per write (/kafka-acl-changes/acl_changes_<seq> holding
// "Type:name" for literal patterns, /kafka-acl-extended-changes/acl_changes_<seq>
// holding {"version":1,"resourceType","name","patternType"} for prefixed ones),
// and a cache on every broker rebuilt from those notifications through
// watches, so an ACL written through one broker applies on all of them within
// the store's watch latency.
//
// Decisions are internal/acl's (shared with `ktool acl check`); the cache is
// an immutable acl.Index swapped atomically, so a decision takes no lock and
// allocates nothing.
package authz
