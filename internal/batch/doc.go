// Package batch owns Kafka's magic-v2 record batch format: its layout, header
// parsing, validation of headers and records, record iteration, the CRC32C,
// the attribute bits, control batches (transaction markers), and the
// decompression and recompression of a batch's records section through a
// codec resolver. Nothing else in ktool reads or writes a batch's bytes by
// position; broker and tools both import it, which is why it sits under
// internal/ rather than broker/.
//
// A batch is, big-endian, with the byte position of each field:
//
//	 0 baseOffset           int64  first offset; the leader sets it in place
//	 8 batchLength          int32  bytes after this field (LogOverhead = 12 is what it leaves out)
//	12 partitionLeaderEpoch int32  the leader sets it in place
//	16 magic                int8   2
//	17 crc                  uint32 CRC32C (Castagnoli) of everything from attributes to the end
//	21 attributes           int16  bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd),
//	                               3 LogAppendTime, 4 transactional, 5 control
//	23 lastOffsetDelta      int32  offset of the last record minus baseOffset
//	27 firstTimestamp       int64  timestamp of the first record
//	35 maxTimestamp         int64  largest record timestamp (the broker's time with LogAppendTime)
//	43 producerId           int64  -1 without an idempotent producer
//	51 producerEpoch        int16
//	53 baseSequence         int32  sequence of the first record; sequences wrap at MaxInt32
//	57 recordsCount         int32
//	61 records              the records section, compressed as a whole when the codec is not 0
//
// baseOffset, batchLength and partitionLeaderEpoch lie outside the CRC, so a
// leader assigns offsets and its epoch without recomputing it.
//
// Each record in the (decompressed) section is
//
//	length         varint  bytes of the record after this field
//	attributes     int8    unused, 0
//	timestampDelta varint  timestamp minus firstTimestamp
//	offsetDelta    varint  offset minus baseOffset
//	keyLength      varint  -1 for a null key
//	key            bytes
//	valueLength    varint  -1 for a null value (a tombstone)
//	value          bytes
//	headerCount    varint
//	headers        each: keyLength varint, key (never null), valueLength varint (-1 null), value
//
// A producer's batch holds exactly recordsCount = lastOffsetDelta+1 records
// with offset deltas 0, 1, 2 ... and nothing after the last one. A batch the
// log cleaner thinned keeps its offset span and may hold fewer records (none,
// when kept for its producer's sequence numbers), their deltas still rising.
//
// A control batch (attribute bit 5, always transactional, never compressed)
// holds one control record: key = int16 version (0), int16 type (0 ABORT,
// 1 COMMIT); value = int16 version (0), int32 coordinator epoch.
package batch
