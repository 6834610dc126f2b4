// Package embedded is the in-process coordination store: a ZooKeeper-shaped
// znode tree for standalone brokers and in-process clusters, persisted in a
// directory. Server.Connect hands out sessions (coord.Store); Server.Expire
// kills one, as a broker death would.
//
// On-disk format. The directory holds two files:
//
//	snapshot  one record: the whole tree (every znode with data and stat)
//	          and the zxid it reflects.
//	journal   records appended after the snapshot, one per transaction
//	          (a single change, a Multi, or a session's ephemeral cleanup).
//
// A record is a 4-byte big-endian payload length, a 4-byte big-endian
// CRC-32C of the payload, and the payload, JSON encoded. Every journal
// append is fsynced before the change becomes visible, and every change,
// ephemeral ones included, takes the next zxid, so zxids (and the czxid
// broker epochs derived from them) never repeat across restarts.
//
// When the journal outgrows both 4 MiB and the snapshot, the tree is written
// to snapshot.tmp, fsynced and renamed over the snapshot, then the journal is
// replaced by an empty one the same way. Open loads the snapshot and replays
// journal records with a greater zxid, so a crash between those steps loses
// nothing. A torn final journal record (a crash mid-append) is cut off; a bad
// record followed by more data is reported as corruption.
//
// Ephemeral nodes are journaled like the rest, but their sessions die with
// the process, so Open deletes any it finds, as ZooKeeper does when it
// expires the sessions of a restarted ensemble.
package embedded
