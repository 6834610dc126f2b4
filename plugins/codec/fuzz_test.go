package codec_test

import (
	"context"
	"testing"

	"github.com/ktoolhq/ktool/plugins/codec"
)

// FuzzDecompress feeds arbitrary bytes to every built-in codec with a small
// limit: bad input must give an error, never a panic, and no output may pass
// the limit.
func FuzzDecompress(f *testing.F) {
	ctx := context.Background()
	for _, c := range codec.Builtins() {
		out, err := c.Compress(ctx, [][]byte{sample(5000), make([]byte, 100<<10)})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(out[0], uint16(6000))
		f.Add(out[1], uint16(4096))
	}
	f.Add([]byte("not compressed"), uint16(100))
	builtins := codec.Builtins()
	f.Fuzz(func(t *testing.T, data []byte, limit uint16) {
		for _, c := range builtins {
			out, err := c.Decompress(ctx, [][]byte{data}, int(limit)+1)
			if err != nil {
				continue
			}
			if len(out) != 1 || len(out[0]) > int(limit)+1 {
				t.Fatalf("%s: %d sections, %d bytes past the limit %d", c.Name(), len(out), len(out[0]), int(limit)+1)
			}
		}
	})
}
