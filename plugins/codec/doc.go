// Package codec is the contract of Kafka's record compression codecs
// (gzip, snappy, lz4, zstd), which plugins can also serve, and the built-in
// implementations of the four. Every decompression is a stream into a sink
// bounded by the caller's limit. Record batches themselves belong to
// internal/batch; which codec serves an id is the plugin catalog's choice.
package codec
