// Package replica holds the partitions a broker hosts and their replication state:
// leader epoch, AR, ISR, high watermark and log end offsets of followers on the
// leader; follower fetchers that pull from leaders with Fetch (replica_id set) and
// truncate with OffsetForLeaderEpoch; ISR shrink and expand; and the waits of
// acks=all produce and long-poll fetch, woken by appends and high-watermark moves
// rather than polling. It also owns the log dirs (logdirs.go): placement of
// new partitions on the least-loaded dir, and KIP-112's offline dirs.
//
// The invariants it keeps, each tested in invariants_test.go:
//
//   - A leader never appends a record fetched from another broker once it has
//     taken its epoch: the fetcher drops answers to questions no longer open,
//     and every write on a leader's word (append, truncation, reset) goes
//     through a Partition method that checks, under the lock makeLeader takes,
//     that the partition still follows that leader at that epoch (follow.go).
//   - OffsetForLeaderEpoch answers from the log's epoch cache, for followers
//     and consumers alike: the end of epoch E is where the next larger epoch
//     starts, or the log end for the latest (LastOffsetForLeaderEpoch).
//   - Every record below the high watermark is on every ISR member the
//     controller could elect: the high watermark waits for each ISR member's
//     first fetch in the current epoch, for a member whose removal is still
//     being written, and for a follower whose expansion is being written or
//     failed without a known outcome (pendingAdd).
//
// A follower that asks its new leader before the leader has taken the epoch
// is answered once the leader's own LeaderAndIsr is applied (AwaitLeaderEpoch),
// not refused into a fetch backoff.
package replica
