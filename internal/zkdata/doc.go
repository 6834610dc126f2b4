// Package zkdata holds Kafka's ZooKeeper layout as of Apache Kafka 2.8: the
// znode paths and the JSON written in them (kafka.zk.ZkData). Everything here
// reads what a Kafka broker or tool wrote and writes what they read, so a
// ktool cluster and Kafka-aware tools share one tree.
package zkdata
