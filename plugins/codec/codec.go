package codec

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// Kafka's codec ids, as stored in bits 0-2 of a record batch's attributes.
const (
	IDNone   int8 = 0
	IDGzip   int8 = 1
	IDSnappy int8 = 2
	IDLZ4    int8 = 3
	IDZstd   int8 = 4
)

// MaxDecompressed is the most any one records section may decompress to,
// whatever limit a caller asks for.
const MaxDecompressed = 1 << 30

// ErrTooLarge is wrapped by a Decompress error when a section's output would
// pass the limit the caller gave.
var ErrTooLarge = errors.New("decompressed section exceeds its limit")

// Codec compresses and decompresses record batches' records sections. A call
// carries whole sections (one or several), never single records, so a codec
// served by a plugin process pays one round trip per call, not per record.
type Codec interface {
	Name() string // "gzip", "snappy", "lz4", "zstd"
	ID() int8     // 1..4
	Compress(ctx context.Context, records [][]byte) ([][]byte, error)
	// Decompress expands each section into at most limit bytes (<= 0 or
	// above MaxDecompressed means MaxDecompressed), failing with an error
	// that wraps ErrTooLarge as soon as more would come out: no declared
	// size is trusted and nothing past the limit is allocated.
	Decompress(ctx context.Context, data [][]byte, limit int) ([][]byte, error)
}

// Streamer is implemented by codecs that run in process: NewReader streams
// one section's decompressed bytes, so a caller can check records as they
// come out and stop at the first bad one. Close returns pooled state.
type Streamer interface {
	NewReader(section []byte) (io.ReadCloser, error)
}

// Builtins returns fresh instances of the four codecs Kafka defines. Each
// instance pools its encoders and decoders, so make them once and share them.
func Builtins() []Codec {
	return []Codec{NewGzip(), NewSnappy(), NewLZ4(), NewZstd()}
}

// Limit clamps a caller's decompression limit to (0, MaxDecompressed].
func Limit(limit int) int {
	if limit <= 0 || limit > MaxDecompressed {
		return MaxDecompressed
	}
	return limit
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

// decompressAll reads each section through s into a bounded sink.
func decompressAll(ctx context.Context, s Streamer, name string, data [][]byte, limit int) ([][]byte, error) {
	limit = Limit(limit)
	return each(ctx, data, func(src []byte) ([]byte, error) {
		r, err := s.NewReader(src)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		defer r.Close()
		out, err := ReadLimited(r, limit, 4*len(src))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return out, nil
	})
}

// ReadLimited reads r to the end into a buffer grown as bytes arrive
// (starting from sizeHint, itself capped), failing with ErrTooLarge once
// more than limit bytes come out.
func ReadLimited(r io.Reader, limit, sizeHint int) ([]byte, error) {
	buf := make([]byte, 0, min(max(sizeHint, 512), limit+1, 1<<20))
	for {
		if len(buf) == cap(buf) {
			if len(buf) > limit {
				return nil, fmt.Errorf("more than %d bytes: %w", limit, ErrTooLarge)
			}
			// Double, but never past limit+1: one byte over is all it takes to know.
			grown := make([]byte, len(buf), min(2*cap(buf), limit+1))
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > limit {
			return nil, fmt.Errorf("more than %d bytes: %w", limit, ErrTooLarge)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
