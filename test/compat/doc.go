// Package compat proves that Kafka clients not written in Go work against the ktool
// broker unchanged: librdkafka through kcat, and kafkajs on Node. The tests run the
// built ktool binary (standalone, and three brokers on a real ZooKeeper) and the
// clients as child processes, and check exact round trips with franz-go. They skip
// with a message when kcat, node or test/compat/kafkajs/node_modules are missing;
// setup.sh installs them. FINDINGS.md records every incompatibility found.
package compat
