// Package txn is `ktool txn`: list and describe transactions (ListTransactions
// and DescribeTransactions, Kafka 3.0's KIP-664 APIs) and abort a hanging one
// the way kafka-transactions.sh does, by having the partition leader write an
// ABORT marker for the producer (DescribeProducers, then WriteTxnMarkers).
package txn
