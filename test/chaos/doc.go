// Package chaos holds process-level cluster tests: real ZooKeeper, the built
// ktool binary as broker processes, and franz-go clients. Brokers are killed
// with SIGKILL and stopped with SIGTERM while a verifying producer writes, and
// the tests check that no acknowledged record is lost, duplicated or
// reordered and that replicas end byte-identical. The package has only tests.
package chaos
