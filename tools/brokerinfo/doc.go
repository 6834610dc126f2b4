// Package brokerinfo implements `ktool broker list`: the brokers in the
// cluster's metadata with their endpoint, rack, whether each is the active
// controller, how many partitions each leads and how many replicas it hosts.
package brokerinfo
