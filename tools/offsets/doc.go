// Package offsets implements `ktool offsets`: the earliest, latest or by
// timestamp offset of every partition of some topics, over ListOffsets, as
// kafka-get-offsets.sh prints them.
package offsets
