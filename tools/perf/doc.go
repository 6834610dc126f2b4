// Package perf implements `ktool perf produce` and `ktool perf consume`, load
// generators in the spirit of kafka-producer-perf-test and
// kafka-consumer-perf-test. They speak only the Kafka protocol, so they measure
// any Kafka-compatible cluster, and report records/s, MB/s (MB = 2^20 bytes) and
// latency percentiles from an HdrHistogram.
package perf
