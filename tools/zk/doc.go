// Package zk implements `ktool zk ls|get|tree`, a ZooKeeper browser that
// pretty-prints Kafka's JSON znodes with their stat, and the connection helper
// (addresses with a chroot, "h1:p1,h2:p2/chroot") that other ZooKeeper-reading
// commands share.
package zk
