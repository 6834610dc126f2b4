// Package e2e runs the built ktool binary as a child process and checks the broker
// from the outside: real franz-go clients for produce, consume and admin, raw
// Kafka frames for robustness, SIGKILL and on-disk damage for durability. It holds
// tests only; every broker a test starts is stopped by that test.
package e2e
