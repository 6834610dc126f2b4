// Package coord defines the coordination Store the broker and its controller
// use: a ZooKeeper-shaped tree of znodes with versions, ephemeral and
// sequential nodes, one-shot watches and atomic multi-operations.
//
// Two implementations exist: zkstore talks to a real ZooKeeper ensemble (the
// cluster mode, exactly like Kafka's ZooKeeper mode) and embedded keeps the
// tree in-process, persisted in a directory (standalone mode and in-process
// test clusters). Both behave the same; coordtest holds the conformance suite.
package coord
