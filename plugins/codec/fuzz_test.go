package codec_test

import (
	"context"
	"testing"

	"github.com/ktoolhq/ktool/plugins/codec"
)

// FuzzRecompressBatches feeds arbitrary bytes as a records field: bad input
// must give an error, never a panic, and good output must split cleanly.
func FuzzRecompressBatches(f *testing.F) {
	ctx := context.Background()
	builtins := codec.Builtins()
	lookup := codec.Lookup(builtins)
	seed := codec.NewGzip()
	sec, _ := seed.Compress(ctx, [][]byte{[]byte("records")})
	f.Add(make([]byte, 61), uint8(0))
	f.Add(append(append(make([]byte, 8), 0, 0, 0, 49+byte(len(sec[0]))), make([]byte, 49)...), uint8(3))
	f.Fuzz(func(t *testing.T, field []byte, to uint8) {
		var target codec.Codec
		if int(to)%5 > 0 {
			target = builtins[int(to)%5-1]
		}
		out, err := codec.RecompressBatches(ctx, field, target, lookup)
		if err != nil {
			return
		}
		if _, err := codec.SplitBatches(out); err != nil {
			t.Fatalf("RecompressBatches output does not split: %v", err)
		}
		for _, c := range builtins {
			_, _ = c.Decompress(ctx, [][]byte{field})
		}
		_, _ = codec.SplitRecords(field)
	})
}
