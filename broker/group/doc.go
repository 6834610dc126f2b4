// Package group is the broker's group coordinator: consumer group membership
// (join, sync, heartbeat, leave, static members, rebalances and their timeouts)
// and committed offsets, kept durable in the __consumer_offsets topic with
// Kafka's own record layouts so Kafka tools can read it.
//
// The coordinator serves the groups whose __consumer_offsets partition this
// broker leads (abs(javaHashCode(group)) mod partitions, as Kafka). Each such
// partition is a shard with its own lock, its groups, and one writer that
// appends its records in order and batches what queues up while an append
// waits for the ISR.
package group
