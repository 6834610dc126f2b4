// Package logdump implements `ktool log dump`, which prints Kafka log
// segment files (.log, .index, .timeindex) the way kafka-dump-log.sh does:
// every batch's header fields and CRC check, optionally every record
// (decompressed through the codec plugins), and a check of the offset and
// time indexes against the segment they index.
package logdump
