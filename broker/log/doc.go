// Package log is the durable, segmented log of one partition, kept in
// Kafka's on-disk format so that Kafka's tools and `ktool log dump` read it.
//
// # Files
//
// The caller gives each partition its directory (named <topic>-<partition>).
// In it:
//
//   - %020d.log: a segment, named by the offset of its first record. It holds
//     magic-v2 record batches exactly as they travel on the wire: baseOffset
//     int64, length int32 (bytes after this field), partitionLeaderEpoch
//     int32, magic int8 (2), crc uint32 (CRC32C of attributes to the end),
//     attributes int16, lastOffsetDelta int32, firstTimestamp int64,
//     maxTimestamp int64, producerId int64, producerEpoch int16, baseSequence
//     int32, record count int32, records. All big-endian.
//   - %020d.index: the sparse offset index. 8-byte entries: int32 last offset
//     of a batch relative to the segment base, int32 file position where that
//     batch starts. An entry is added before a batch once more than
//     index.interval.bytes have been written since the previous entry; a
//     lookup takes the entry with the largest offset <= the target and reads
//     batch headers forward from its position.
//   - %020d.timeindex: 12-byte entries: int64 largest timestamp so far, int32
//     relative offset of the batch that carried it. An entry is added at the
//     same points as offset index entries when the largest timestamp grew, and
//     once more when the segment stops being active.
//   - Index files hold exactly their entries, so their size gives the count.
//     The entries live in memory; a file gets those it lacks when its segment
//     is flushed, rolled, cut or closed, so after a crash the files of
//     segments past the recovery point may lag (recovery rebuilds them).
//   - recovery-point-offset-checkpoint, log-start-offset-checkpoint,
//     high-watermark and, once the log was cleaned, cleaner-offset-checkpoint
//     (where the next dirty section starts): Kafka's offset checkpoint text
//     format ("0", the count "1", then "<topic> <partition> <offset>").
//     Written when the value changes; the first three are not written while
//     0, which is what their absence means (a new partition has none).
//   - leader-epoch-checkpoint: "0", the count, then "<epoch> <startOffset>"
//     lines, oldest first (KIP-101, KIP-279).
//   - %020d.snapshot: producer state at that offset, in ktool's own format:
//     "KTPS", version uint16 (2), CRC32C uint32 of the rest, offset int64,
//     producer count uint32, then per producer id int64, epoch int16,
//     coordinator epoch int32 of its last marker, first offset int64 of its
//     open transaction (-1 if none), and up to five recent batches (first and
//     last sequence int32, first and last offset int64, max timestamp int64).
//     Version 1 (no coordinator epoch, no transaction) is still read. The two
//     newest are kept.
//   - %020d.txnindex: the aborted transaction index of the segment, in
//     Kafka's format: 34-byte entries of version int16 (0), producerId int64,
//     firstOffset int64, lastOffset int64 (the ABORT marker), lastStableOffset
//     int64, one per ABORT marker in the segment, in marker order; no file
//     when there are none. Rebuilt by the producer-state replay of recovery,
//     deleted with its segment.
//   - .kafka_cleanshutdown: created by Close once everything it vouches for
//     is on stable storage (without an fsync of its own: a lost marker only
//     costs a recovery), removed by Open (with a directory fsync).
//   - While the cleaner swaps segments in: %020d.log.cleaned (and .index,
//     .timeindex) for a rewritten segment being written, the same names with
//     .swap once it is committed, and cleaner-swap-ranges ("0", the count,
//     then "<base> <end>" lines: the rewrite at base replaces the old
//     segments starting in [base, end)).
//
// Checkpoints and snapshots are replaced atomically (temporary file, fsync,
// rename, directory fsync). The offset and leader-epoch checkpoints, which
// are rewritten every few seconds, use <name>.spare as their temporary file
// and, on Linux, exchange it with <name> (renameat2 RENAME_EXCHANGE): the
// spare then holds the previous content and is overwritten by the next
// rewrite, so no inode is created or deleted. Recovery leaves spares alone.
//
// # Appending
//
// A leader append validates the produce request's batches (lengths, magic,
// CRC32C, record count, max.message.bytes) without decoding records, checks
// idempotent producers against the last five batches of each producer id,
// writes base offsets and the leader epoch into the caller's bytes (fields
// outside the CRC; with LogAppendTime the timestamps and attribute bit too,
// and the CRC is recomputed) and writes all batches with one write. On a
// topic whose cleanup.policy includes compact the records are decoded too, to
// refuse those without a key (INVALID_RECORD, as Kafka does). A new segment
// starts when the batches would overflow segment.bytes, when
// segment.ms has passed since the first batch's timestamp, or when relative
// offsets would overflow; a producer snapshot is taken then.
//
// # Transactions
//
// Producer state also tracks transactions (Kafka 2.8's rules): a
// transactional batch opens its producer's transaction at its first offset;
// a COMMIT or ABORT control batch (AppendMarker, as leader; replicated ones
// alike) closes it and records the coordinator epoch. A producer with an open
// transaction may append only transactional batches; a marker of an older
// producer epoch or coordinator epoch is refused (KIP-890 part 1: a late
// marker cannot close the next transaction), and with verification
// (AppendAsLeaderTxn) a transactional batch that would open a transaction
// needs the coordinator's confirmation, taken with no marker for the producer
// landing since. The last stable offset is the first offset of the oldest
// open transaction, or the high watermark if smaller. Retention keeps the
// segment holding that first offset and DeleteRecords refuses to pass it, so
// the LSO never falls below the log start.
//
// # Reading
//
// Read finds the batch holding an offset through the offset index and 61-byte
// header reads, extends the region to the last index entry that fits the
// limits and then header by header, and returns a file region of whole
// batches of one segment, for the caller to send with sendfile at the
// region's own offset. No record byte is read into memory. Regions hold a
// reference to the segment's file: retention and truncation unlink files at
// once but close them only when the last region is released, and a segment
// cut while regions of it are held is copied first, so a region's bytes never
// change.
//
// # Descriptors
//
// Only the active segment's .log stays open. Index files are opened only to
// be written. An inactive segment's .log is opened when a reference is taken
// (a read, a flush, the cleaner, truncation) and, once the last one is
// released, waits in the broker's FileCache, which closes the least recently
// used beyond its bound; a file with references is never closed. PlanFiles
// checks at start that RLIMIT_NOFILE holds one descriptor per partition plus
// a reserve and the cache.
//
// # Flushing and recovery
//
// Data is fsynced by Flush (flush.messages on append, flush.ms and rolled
// segments through MaybeFlush, and Close), which then advances the recovery
// point. Open without the clean-shutdown marker rescans every segment from the
// one holding the recovery point: the first torn, corrupt (CRC, length,
// record count) or overlapping batch cuts the segment there and deletes
// all later segments, and the indexes are rebuilt and the log flushed. When
// the rescan finds the log as its last flush left it (no cut, index files
// holding the rebuilt entries, the recovery point at the end) nothing is
// written: the active segment's indexes are fsynced by the next flush or
// Close instead. Segments whose index files
// are missing or inconsistent are rescanned as well, even after a clean
// shutdown. Leader epochs are truncated to the recovered end (after a clean
// load that only drops entries past the end, the file is rewritten by the
// next change, flush or Close); producer state is the newest snapshot at or
// below it plus a replay of the batches after. Close of a log written to
// since its last flush flushes and snapshots it; of one that was not, it
// only rewrites changed checkpoints, and no snapshot when the one on disk is
// at the LEO.
//
// # Retention
//
// EnforceRetention deletes the oldest non-active segments whose largest
// timestamp is older than retention.ms, while more than retention.bytes would
// remain (both only when cleanup.policy includes delete), or that lie wholly
// below the log start offset (DeleteRecords, refused without delete).
//
// # Compaction
//
// Clean implements cleanup.policy=compact as Kafka's cleaner does. The dirty
// section runs from the cleaner checkpoint to the first of: the active
// segment, the high watermark, the first segment whose largest timestamp is
// within min.compaction.lag.ms. A pass runs when the dirty section exceeds
// min.cleanable.dirty.ratio of the inactive bytes, or holds a segment whose
// first batch is older than max.compaction.lag.ms. It maps the MD5 of each
// key in the dirty section to its latest offset (at most
// log.cleaner.dedupe.buffer.size/48 keys; a full map ends the pass early and
// the next one goes on), then rewrites every inactive segment from the first
// up to where the map ends, in groups of at most segment.bytes that become
// one segment each, named by the group's first base offset. A record stays
// if it is past the map's end or is its key's latest; a tombstone also needs
// its batch's delete horizon (KIP-534) not to have passed; records without a
// key go. A batch that loses records is rebuilt with the same base offset,
// last offset delta, record offsets, producer fields, codec and first
// timestamp, and a recomputed largest timestamp; records are copied, not
// re-encoded. A batch that keeps a tombstone and has no delete horizon gets
// one: attribute bit 6 set and the first timestamp replaced by now plus
// delete.retention.ms, its records re-encoded with timestamp deltas from it
// (their timestamps unchanged). A batch that loses all goes, unless it is its
// producer's newest, which stays empty (record count 0, no horizon) so
// sequence numbers survive. Offsets never
// change, so a cleaned log has gaps: batches hold fewer records than their
// offset span and segments may start after the previous one's end. Reads,
// recovery and follower appends accept both; only client batches must hold
// exactly their span. The first segment is never removed, so the log start
// offset holds; other emptied segments are.
//
// The pass holds no lock while it reads and writes: it takes file
// references, writes the .cleaned files and fsyncs them. The swap holds the
// locks: it checks that retention or truncation did not change the
// segments (else the pass is dropped), writes cleaner-swap-ranges, renames
// .cleaned to .swap (indexes first, the log last: the commit point), then
// per range deletes the old segments after the first and renames the .swap
// files over the first, and installs the new segments. Readers holding a
// region of an old segment keep its file. Open finishes committed swaps from
// the ranges (or, lacking them, Kafka's rule: the old segments below the
// swap's last batch), and deletes .cleaned and uncommitted .swap files.
// Transactions: the dirty section also ends at the first offset of an open
// transaction; records of aborted transactions (the aborted transaction
// index) go, and shadow no key in the map; committed ones are cleaned as
// others. Markers go as in Kafka: a pass that meets no batch of a marker's
// transaction (it reads the log from the first segment) stamps the marker's
// delete horizon, and drops the index entry of an abort; the first pass
// after the horizon removes the marker. A marker whose producer's state has
// no batch of the marker's epoch stays, so that a rebuild still fences older
// epochs. Before such a pass is swapped in, the producer snapshots at or
// below its last removed marker are deleted: a replay from one could reopen
// the transaction that marker closed.
//
// # Locking
//
// appendMu serializes changes, flushMu serializes fsyncs and checkpoint
// writes, and mu guards the in-memory state readers need. Readers hold mu
// only to look up a position and take a file reference; they read headers
// without it, and only up to the size published after a write completed, so
// they never see part of a batch.
package log
