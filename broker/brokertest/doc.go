// Package brokertest runs in-process Kafka-compatible clusters for tests: N
// brokers on random 127.0.0.1 ports with data in t.TempDir(), coordinated by the
// embedded store or by a real ZooKeeper the harness starts itself, with Kill
// (an abrupt stop that ends the broker's session) and Restart on the same data.
package brokertest
