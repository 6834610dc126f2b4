package codec_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/plugins/codec"
)

func sample(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "record %d with a value that repeats a bit: %s\n", i, strings.Repeat("ab", i%17))
	}
	return b.Bytes()[:n]
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	inputs := [][]byte{{}, []byte("x"), sample(1000), sample(200 << 10)}
	for _, c := range codec.Builtins() {
		t.Run(c.Name(), func(t *testing.T) {
			if got, ok := codec.IDForName(c.Name()); !ok || got != c.ID() {
				t.Fatalf("IDForName(%q) = %d, %v; want %d", c.Name(), got, ok, c.ID())
			}
			comp, err := c.Compress(ctx, inputs)
			if err != nil {
				t.Fatal(err)
			}
			if len(comp) != len(inputs) {
				t.Fatalf("Compress returned %d sections for %d", len(comp), len(inputs))
			}
			if len(comp[3]) >= len(inputs[3]) {
				t.Errorf("compressed %d bytes to %d: no gain", len(inputs[3]), len(comp[3]))
			}
			// Every compressed section must be readable by kgo, as a consumer
			// would. The empty one is left out: no batch has an empty records
			// section, and kgo rejects the header-only xerial stream Java writes for it.
			dec := kgo.DefaultDecompressor()
			for i, b := range comp[1:] {
				i++
				got, err := dec.Decompress(b, kgo.CompressionCodecType(c.ID()))
				if err != nil {
					t.Fatalf("kgo cannot decompress section %d: %v", i, err)
				}
				if !bytes.Equal(got, inputs[i]) {
					t.Fatalf("kgo decompressed section %d to %d bytes, want %d", i, len(got), len(inputs[i]))
				}
			}
			back, err := c.Decompress(ctx, comp, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i := range inputs {
				if !bytes.Equal(back[i], inputs[i]) {
					t.Fatalf("section %d: round trip gave %d bytes, want %d", i, len(back[i]), len(inputs[i]))
				}
			}
		})
	}
}

func TestDecompressGarbage(t *testing.T) {
	for _, c := range codec.Builtins() {
		_, err := c.Decompress(context.Background(), [][]byte{[]byte("this is not compressed data at all")}, 0)
		if err == nil {
			t.Errorf("%s: decompressing garbage succeeded", c.Name())
		}
	}
}

func TestCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range codec.Builtins() {
		if _, err := c.Compress(ctx, [][]byte{sample(10)}); err == nil {
			t.Errorf("%s: Compress on a canceled context succeeded", c.Name())
		}
	}
}

func TestSnappyReadsXerialAndRaw(t *testing.T) {
	ctx := context.Background()
	c := codec.NewSnappy()
	in := sample(100 << 10)
	comp, err := c.Compress(ctx, [][]byte{in})
	if err != nil {
		t.Fatal(err)
	}
	x := comp[0]
	header := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}
	if !bytes.HasPrefix(x, header) {
		t.Fatalf("snappy output does not start with the xerial header: % x", x[:16])
	}
	// Java's client writes 32 KiB blocks, each behind a big-endian length.
	blocks := 0
	for pos := 16; pos < len(x); blocks++ {
		n := int(binary.BigEndian.Uint32(x[pos:]))
		block := x[pos+4 : pos+4+n]
		if l, err := s2.DecodedLen(block); err != nil || l > 32<<10 {
			t.Fatalf("block %d decodes to %d bytes (%v), want at most 32 KiB", blocks, l, err)
		}
		pos += 4 + n
	}
	if blocks != 4 {
		t.Errorf("got %d xerial blocks for 100 KiB, want 4", blocks)
	}
	raw := s2.EncodeSnappy(nil, in)
	got, err := c.Decompress(ctx, [][]byte{x, raw}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range got {
		if !bytes.Equal(g, in) {
			t.Errorf("section %d: decoded %d bytes, want %d", i, len(g), len(in))
		}
	}
}

func TestLZ4FrameIsKafkas(t *testing.T) {
	comp, err := codec.NewLZ4().Compress(context.Background(), [][]byte{sample(1000)})
	if err != nil {
		t.Fatal(err)
	}
	f := comp[0]
	if binary.LittleEndian.Uint32(f) != 0x184D2204 {
		t.Fatalf("not an LZ4 frame: % x", f[:4])
	}
	flg, bd := f[4], f[5]
	if flg>>6 != 1 || flg&0x20 == 0 || flg&0x04 != 0 {
		t.Errorf("FLG %08b: want version 1, independent blocks, no content checksum", flg)
	}
	if bd>>4&7 != 4 {
		t.Errorf("BD %08b: want 64 KiB blocks", bd)
	}
}
