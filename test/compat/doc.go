// Package compat proves that Kafka clients other than franz-go work against the
// ktool broker unchanged: librdkafka through kcat and confluent-kafka-python,
// kafkajs on Node, and the Go clients sarama and segmentio/kafka-go. The tests run
// the built ktool binary (standalone, and three brokers on a real ZooKeeper), the
// non-Go clients as child processes and the Go ones in the test process, and check
// exact round trips with franz-go. The non-Go ones skip with a message when kcat,
// node or test/compat/kafkajs/node_modules are missing; setup.sh installs them.
// FINDINGS.md records every incompatibility found.
package compat
