// Package acl is `ktool acl`: create, list and delete ACLs over the Kafka
// protocol (CreateAcls, DescribeAcls, DeleteAcls) with kafka-acls.sh's
// options, and `ktool acl check`, which computes from DescribeAcls whether a
// principal may do an operation and which ACL decides it. The matching rules
// are internal/acl's, the same code the broker's authorizer runs (tools/
// import nothing of broker/).
package acl
