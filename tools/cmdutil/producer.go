package cmdutil

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ParseAcks maps an --acks value (all or -1, leader or 1, none or 0) to the
// client's setting; idempotent reports whether idempotent writes are possible
// with it (they need acks=all).
func ParseAcks(s string) (acks kgo.Acks, idempotent bool, err error) {
	switch strings.ToLower(s) {
	case "all", "-1":
		return kgo.AllISRAcks(), true, nil
	case "leader", "1":
		return kgo.LeaderAck(), false, nil
	case "none", "0":
		return kgo.NoAck(), false, nil
	}
	return kgo.Acks{}, false, Usagef("--acks %q: want all, leader or none (-1, 1, 0)", s)
}

// ParseCompression maps a --compression name to the client's codec.
func ParseCompression(s string) (kgo.CompressionCodec, error) {
	switch strings.ToLower(s) {
	case "", "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, Usagef("--compression %q: want none, gzip, snappy, lz4 or zstd", s)
}
