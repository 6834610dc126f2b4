// Package e2e runs the built ktool binary as a child process and checks the broker
// from the outside: real franz-go clients for produce, consume and admin, raw
// Kafka frames for robustness, SIGKILL and on-disk damage for durability. It holds
// tests only; every broker a test starts is stopped by that test.
//
// TestMain builds ./cmd/ktool once (without -race); KTOOL_E2E_BIN points the tests
// at a prebuilt binary instead. The durability test writes 200,000 + 20,000
// records under -short or CI=true, and 1,000,000 + 100,000 otherwise or when
// KTOOL_E2E_FULL=1. FINDINGS.md lists broker bugs these tests found.
package e2e
