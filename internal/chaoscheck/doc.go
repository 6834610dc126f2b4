// Package chaoscheck holds the workloads and checkers of the fault tests
// (test/chaos, test/netns): an idempotent acks=all producer of sequence
// numbers that remembers what was acknowledged where, a live consumer that
// must never be moved back, the read-back and comparison that find lost,
// duplicated, reordered and rewritten records, a consumer-group workload
// whose members commit as they go, and a transactional workload whose
// read_committed reader must see every commit whole and no abort.
package chaoscheck
