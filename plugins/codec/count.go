package codec

import (
	"context"
	"io"
	"sync/atomic"
)

// Counter counts the Compress and Decompress calls made through the codecs
// it wraps, so a test can prove a code path never re-encodes, or never
// decodes. Streaming a section (Streamer.NewReader) counts as a decompression.
type Counter struct {
	compress, decompress atomic.Int64
}

// Compressions is the number of Compress calls made so far.
func (c *Counter) Compressions() int64 { return c.compress.Load() }

// Decompressions is the number of Decompress calls and streamed sections so far.
func (c *Counter) Decompressions() int64 { return c.decompress.Load() }

// Wrap returns cd counting its calls in c; it streams when cd does.
func (c *Counter) Wrap(cd Codec) Codec {
	w := &counted{Codec: cd, c: c}
	if s, ok := cd.(Streamer); ok {
		return &countedStreamer{counted: w, s: s}
	}
	return w
}

// resolver is what Codecs wraps: anything that finds codecs by id.
type resolver interface {
	CodecByID(ctx context.Context, id int8) (Codec, error)
}

// Codecs wraps a resolver so every codec it returns counts in c.
func (c *Counter) Codecs(r resolver) *CountingResolver { return &CountingResolver{r: r, c: c} }

// CountingResolver is a resolver whose codecs count their calls.
type CountingResolver struct {
	r resolver
	c *Counter
}

// CodecByID resolves id and wraps the codec.
func (cr *CountingResolver) CodecByID(ctx context.Context, id int8) (Codec, error) {
	cd, err := cr.r.CodecByID(ctx, id)
	if err != nil {
		return nil, err
	}
	return cr.c.Wrap(cd), nil
}

type counted struct {
	Codec
	c *Counter
}

func (c *counted) Compress(ctx context.Context, records [][]byte) ([][]byte, error) {
	c.c.compress.Add(1)
	return c.Codec.Compress(ctx, records)
}

func (c *counted) Decompress(ctx context.Context, data [][]byte, limit int) ([][]byte, error) {
	c.c.decompress.Add(1)
	return c.Codec.Decompress(ctx, data, limit)
}

type countedStreamer struct {
	*counted
	s Streamer
}

func (c *countedStreamer) NewReader(section []byte) (io.ReadCloser, error) {
	c.c.decompress.Add(1)
	return c.s.NewReader(section)
}
