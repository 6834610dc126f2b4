// Package cluster implements `ktool cluster`: for now `health`, which reads
// the cluster's metadata and reports the controller, brokers that host
// replicas but are down, and offline and under-replicated partitions.
package cluster
