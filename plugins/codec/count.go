package codec

import (
	"context"
	"sync/atomic"
)

// Counter counts the Compress and Decompress calls made through the codecs
// it wraps, so a test can prove a code path never calls a codec.
type Counter struct {
	calls atomic.Int64
}

// Calls is the number of codec calls made so far through this counter.
func (c *Counter) Calls() int64 { return c.calls.Load() }

// Wrap returns cd counting its calls in c.
func (c *Counter) Wrap(cd Codec) Codec { return &counted{Codec: cd, n: &c.calls} }

// Lookup wraps a lookup function so every codec it returns counts in c.
func (c *Counter) Lookup(lookup func(id int8) (Codec, error)) func(id int8) (Codec, error) {
	return func(id int8) (Codec, error) {
		cd, err := lookup(id)
		if err != nil {
			return nil, err
		}
		return c.Wrap(cd), nil
	}
}

type counted struct {
	Codec
	n *atomic.Int64
}

func (c *counted) Compress(ctx context.Context, records [][]byte) ([][]byte, error) {
	c.n.Add(1)
	return c.Codec.Compress(ctx, records)
}

func (c *counted) Decompress(ctx context.Context, data [][]byte) ([][]byte, error) {
	c.n.Add(1)
	return c.Codec.Decompress(ctx, data)
}
