// Package topic implements `ktool topic`: create, list, describe (with AR, ISR
// and OSR per partition, and kafka-topics.sh's health filters), delete,
// alter-config and add-partitions. It speaks only the Kafka protocol, so it
// works against any Kafka cluster.
package topic
