// Package cluster implements `ktool cluster`: `health`, which reads a
// cluster's metadata and reports the controller, brokers that host replicas
// but are down, and offline and under-replicated partitions; and the local
// cluster verbs `init` (the wizard of package setup), `up`, `status`,
// `kill`, `start` and `down`, which run N brokers as detached processes on
// ZooKeeper (or in one supervisor process on the embedded store) and act
// only on the processes recorded in the cluster directory.
package cluster
