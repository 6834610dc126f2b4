package codec

import (
	"context"
	"fmt"
)

// Kafka's codec ids, as stored in bits 0-2 of a record batch's attributes.
const (
	IDNone   int8 = 0
	IDGzip   int8 = 1
	IDSnappy int8 = 2
	IDLZ4    int8 = 3
	IDZstd   int8 = 4
)

// MaxDecompressed bounds what one records section may decompress to, so a
// small hostile input cannot make a codec allocate without limit.
const MaxDecompressed = 1 << 30

// Codec compresses and decompresses record batches' records sections. A call
// carries whole sections (one or several), never single records, so a codec
// served by a plugin process pays one round trip per call, not per record.
type Codec interface {
	Name() string // "gzip", "snappy", "lz4", "zstd"
	ID() int8     // 1..4
	Compress(ctx context.Context, records [][]byte) ([][]byte, error)
	Decompress(ctx context.Context, data [][]byte) ([][]byte, error)
}

// Builtins returns fresh instances of the four codecs Kafka defines.
func Builtins() []Codec {
	return []Codec{NewGzip(), NewSnappy(), NewLZ4(), NewZstd()}
}

// Lookup returns a lookup function over codecs by their id.
func Lookup(codecs []Codec) func(id int8) (Codec, error) {
	byID := make(map[int8]Codec, len(codecs))
	for _, c := range codecs {
		byID[c.ID()] = c
	}
	return func(id int8) (Codec, error) {
		if c, ok := byID[id]; ok {
			return c, nil
		}
		return nil, fmt.Errorf("no codec with id %d (known: 1 gzip, 2 snappy, 3 lz4, 4 zstd)", id)
	}
}

// NameForID returns Kafka's name for a codec id ("none" for 0).
func NameForID(id int8) string {
	switch id {
	case IDNone:
		return "none"
	case IDGzip:
		return "gzip"
	case IDSnappy:
		return "snappy"
	case IDLZ4:
		return "lz4"
	case IDZstd:
		return "zstd"
	}
	return fmt.Sprintf("unknown(%d)", id)
}

// IDForName returns the id Kafka gives a codec name, or false.
func IDForName(name string) (int8, bool) {
	for id := IDNone; id <= IDZstd; id++ {
		if NameForID(id) == name {
			return id, true
		}
	}
	return 0, false
}

// each applies fn to every element, stopping early when ctx is done.
func each(ctx context.Context, in [][]byte, fn func([]byte) ([]byte, error)) ([][]byte, error) {
	out := make([][]byte, len(in))
	for i, b := range in {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r, err := fn(b)
		if err != nil {
			return nil, fmt.Errorf("section %d: %w", i, err)
		}
		out[i] = r
	}
	return out, nil
}
