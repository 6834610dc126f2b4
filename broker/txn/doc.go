// Package txn is the broker's transaction coordinator: it owns the state of
// every transactional id whose __transaction_state partition this broker
// leads (abs(javaHashCode(id)) mod partitions, as Kafka), and drives each
// transaction through Kafka's states: Empty, Ongoing, PrepareCommit or
// PrepareAbort, CompleteCommit or CompleteAbort (Dead once expired; the
// PrepareEpochFence of Kafka is the in-memory transition of a fenced
// producer's abort and never reaches the log).
//
// State is durable in __transaction_state with Kafka's record layouts
// (TransactionLogKey v0: transactional id; TransactionLogValue v0: producer
// id and epoch, timeout, state, partitions, timestamps), so kafka-dump-log's
// transaction decoder reads it. A transition is applied in memory only after
// its record is replicated (acks=all, the topic's min.insync.replicas); a
// transactional id has at most one transition in flight, and requests that
// meet one get CONCURRENT_TRANSACTIONS, which clients retry.
//
// Ending a transaction writes PrepareCommit/PrepareAbort, answers the
// client, has every partition leader append the marker (WriteTxnMarkers,
// through the Markers the broker supplies, retried until acknowledged), then
// writes CompleteCommit/CompleteAbort. A coordinator that loads a partition
// with a transaction in a Prepare state sends its markers again, so an
// ended transaction completes across coordinator failovers. The coordinator
// epoch of the markers is the leader epoch of the __transaction_state
// partition.
//
// rules.go holds the transitions as pure functions over Metadata, with
// Kafka's error codes; coordinator.go holds the shards, the log writes,
// loading, the marker sending and the timers (expired transactions are
// aborted with a bumped epoch; idle transactional ids expire as tombstones).
package txn
