// Package codec holds Kafka's record compression codecs (gzip, snappy, lz4,
// zstd) behind one contract that plugins can also serve, and the record
// batch helpers that decompress and recompress magic v2 batches while keeping
// everything but the records section, its length and its CRC exactly as it was.
package codec
