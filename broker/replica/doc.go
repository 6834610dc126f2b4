// Package replica holds the partitions a broker hosts and their replication state:
// leader epoch, AR, ISR, high watermark and log end offsets of followers on the
// leader; follower fetchers that pull from leaders with Fetch (replica_id set) and
// truncate with OffsetForLeaderEpoch; ISR shrink and expand; and the waits of
// acks=all produce and long-poll fetch, woken by appends and high-watermark moves
// rather than polling.
package replica
