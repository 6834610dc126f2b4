// Package netns runs a ktool cluster as on separate hosts: every broker, every
// node of a 3-node ZooKeeper ensemble and the test's clients have their own
// network namespace and address (internal/nethost), and the faults are real
// network faults between them: partitions, one-way cuts, packet loss at a
// host or on one link, delay and reordering (in user space through a
// netfilter queue, as this kernel has no tc netem), the loss of the
// ZooKeeper leader and of the ZooKeeper quorum. The workloads and checkers
// are internal/chaoscheck's: the idempotent producer, a live consumer, a
// consumer group and a transactional producer with a read_committed
// consumer. The tests need root; without it they skip with a loud message.
package netns
