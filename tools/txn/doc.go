// Package txn is `ktool txn`: list and describe transactions (ListTransactions
// and DescribeTransactions, Kafka 3.0's KIP-664 APIs), show a partition's
// producers (DescribeProducers) and abort a hanging transaction the way
// kafka-transactions.sh does, by having the partition leader write an ABORT
// marker for the producer (DescribeProducers, then WriteTxnMarkers).
package txn
