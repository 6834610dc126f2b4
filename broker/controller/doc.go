// Package controller is the cluster controller of Kafka's ZooKeeper mode. Every
// broker runs an Elector: it tries to create the ephemeral /controller znode; the
// winner bumps /controller_epoch with a conditional write and runs the Controller
// until its session or its znode goes away, the others watch /controller and try
// again when it disappears. The Controller watches broker registrations, topics and
// the admin znodes, elects partition leaders from the ISR (first live ISR member in
// AR order; any live replica only with unclean election; -1 otherwise), writes
// partition state with conditional updates, and tells brokers with LeaderAndIsr,
// UpdateMetadata and StopReplica over the Kafka protocol. All state changes run on
// one event loop, as in Kafka.
//
// The election rules (offline and unclean elections, preferred election, the
// automatic rebalance, controlled shutdown, reassignment) are pure functions of a
// partition's state and the broker set, in rules.go; the event handlers in
// brokers.go, topics.go, elections.go, shutdown.go, reassign.go and admin.go pick
// the partitions, write what the rules return (state.go, fenced by the
// controller epoch) and tell the brokers (sender.go). Every event, the
// rebalance tick included, runs under one panic guard.
package controller
