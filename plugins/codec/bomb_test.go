package codec_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/ktoolhq/ktool/plugins/codec"
)

// Bomb compresses n zero bytes with codec id, streaming, so that the test
// itself never holds n bytes. Snappy cannot do better than about 21:1, so
// its bomb is a xerial frame of many 32 KiB blocks of zeros.
func Bomb(t testing.TB, id int8, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	var err error
	switch id {
	case codec.IDGzip:
		w, err = gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	case codec.IDLZ4:
		lw := lz4.NewWriter(&buf)
		err = lw.Apply(lz4.BlockSizeOption(lz4.Block4Mb))
		w = lw
	case codec.IDZstd:
		w, err = zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest))
	case codec.IDSnappy:
		block := s2.EncodeSnappy(nil, make([]byte, 32<<10))
		frame := xerial.Encode(nil, make([]byte, 32<<10))
		out := append([]byte(nil), frame[:16]...)
		for range n / (32 << 10) {
			out = append(out, byte(len(block)>>24), byte(len(block)>>16), byte(len(block)>>8), byte(len(block)))
			out = append(out, block...)
		}
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for range n >> 20 {
		if _, err := w.Write(zeros); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDecompressionBombStops: a section that inflates to 256 MiB (64 MiB for
// snappy) fails at a 1 MiB limit with ErrTooLarge, and allocates a small
// multiple of the limit, never the inflated size.
func TestDecompressionBombStops(t *testing.T) {
	ctx := context.Background()
	const limit = 1 << 20
	for _, c := range codec.Builtins() {
		t.Run(c.Name(), func(t *testing.T) {
			n := 256 << 20
			if c.ID() == codec.IDSnappy {
				n = 64 << 20
			}
			bomb := Bomb(t, c.ID(), n)
			t.Logf("%d bytes inflate to %d", len(bomb), n)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := c.Decompress(ctx, [][]byte{bomb}, limit)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, codec.ErrTooLarge) {
				t.Fatalf("err = %v, want ErrTooLarge", err)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16*limit+uint64(2*len(bomb)) {
				t.Fatalf("allocated %d bytes to refuse a bomb at a %d-byte limit", alloc, limit)
			}
			// Under the limit the same codec still works.
			small := Bomb(t, c.ID(), 1<<20)
			out, err := c.Decompress(ctx, [][]byte{small}, 2<<20)
			if err != nil || len(out[0]) != 1<<20 {
				t.Fatalf("1 MiB under a 2 MiB limit: %d bytes, %v", len(out[0]), err)
			}
		})
	}
}

// TestSnappyBlockLengthLie: a bare snappy block that claims a huge decoded
// length is refused before anything that size is allocated.
func TestSnappyBlockLengthLie(t *testing.T) {
	lie := []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0, 'x'} // uvarint 4 GiB-1, then a literal
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := codec.NewSnappy().Decompress(context.Background(), [][]byte{lie}, 0)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a lying snappy block decoded")
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Fatalf("allocated %d bytes for a 7-byte block", alloc)
	}
}
