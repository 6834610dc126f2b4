package codec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// readCapped reads r to the end, failing once more than MaxDecompressed bytes come out.
func readCapped(r io.Reader, sizeHint int) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(min(sizeHint, MaxDecompressed))
	n, err := buf.ReadFrom(io.LimitReader(r, MaxDecompressed+1))
	if err != nil {
		return nil, err
	}
	if n > MaxDecompressed {
		return nil, fmt.Errorf("decompresses to more than %d bytes", MaxDecompressed)
	}
	return buf.Bytes(), nil
}

// Gzip is codec 1 on klauspost/compress/gzip, with pooled writers and readers.
type Gzip struct {
	writers sync.Pool
	readers sync.Pool
}

// NewGzip returns the gzip codec at the default level.
func NewGzip() *Gzip {
	g := &Gzip{}
	g.writers.New = func() any { return gzip.NewWriter(nil) }
	return g
}

func (*Gzip) Name() string { return "gzip" }
func (*Gzip) ID() int8     { return IDGzip }

func (g *Gzip) Compress(ctx context.Context, records [][]byte) ([][]byte, error) {
	return each(ctx, records, func(src []byte) ([]byte, error) {
		var buf bytes.Buffer
		buf.Grow(len(src)/2 + 64)
		w := g.writers.Get().(*gzip.Writer)
		defer g.writers.Put(w)
		w.Reset(&buf)
		if _, err := w.Write(src); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	})
}

func (g *Gzip) Decompress(ctx context.Context, data [][]byte) ([][]byte, error) {
	return each(ctx, data, func(src []byte) ([]byte, error) {
		r, _ := g.readers.Get().(*gzip.Reader)
		var err error
		if r == nil {
			r, err = gzip.NewReader(bytes.NewReader(src))
		} else {
			err = r.Reset(bytes.NewReader(src))
		}
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		defer g.readers.Put(r)
		out, err := readCapped(r, 4*len(src))
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return out, nil
	})
}

// Snappy is codec 2. It writes the xerial framing Kafka's Java client writes
// (32 KiB snappy blocks behind a 16-byte header) and reads both that framing
// and a bare snappy block, which some clients send.
type Snappy struct{}

// xerialBlock is the block size of xerial framing as Java's snappy-java writes it.
const xerialBlock = 32 << 10

// NewSnappy returns the snappy codec.
func NewSnappy() *Snappy { return &Snappy{} }

func (*Snappy) Name() string { return "snappy" }
func (*Snappy) ID() int8     { return IDSnappy }

func (*Snappy) Compress(ctx context.Context, records [][]byte) ([][]byte, error) {
	return each(ctx, records, func(src []byte) ([]byte, error) {
		blocks := len(src)/xerialBlock + 1
		return xerial.Encode(make([]byte, 0, 16+blocks*(4+s2.MaxEncodedLen(xerialBlock))), src), nil
	})
}

func (*Snappy) Decompress(ctx context.Context, data [][]byte) ([][]byte, error) {
	return each(ctx, data, func(src []byte) ([]byte, error) {
		out, err := xerial.Decode(src)
		if err != nil {
			return nil, fmt.Errorf("snappy: %w", err)
		}
		if len(out) > MaxDecompressed {
			return nil, fmt.Errorf("snappy: decompresses to more than %d bytes", MaxDecompressed)
		}
		return out, nil
	})
}

// LZ4 is codec 3: the LZ4 frame format with 64 KiB independent blocks and
// no content checksum, the frame Kafka's Java client writes.
type LZ4 struct {
	writers sync.Pool
	readers sync.Pool
}

// NewLZ4 returns the lz4 codec.
func NewLZ4() *LZ4 {
	l := &LZ4{}
	l.writers.New = func() any { return lz4.NewWriter(nil) }
	l.readers.New = func() any { return lz4.NewReader(nil) }
	return l
}

func (*LZ4) Name() string { return "lz4" }
func (*LZ4) ID() int8     { return IDLZ4 }

func (l *LZ4) Compress(ctx context.Context, records [][]byte) ([][]byte, error) {
	return each(ctx, records, func(src []byte) ([]byte, error) {
		var buf bytes.Buffer
		buf.Grow(len(src)/2 + 64)
		w := l.writers.Get().(*lz4.Writer)
		defer l.writers.Put(w)
		w.Reset(&buf)
		if err := w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false)); err != nil {
			return nil, fmt.Errorf("lz4: %w", err)
		}
		if _, err := w.Write(src); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	})
}

func (l *LZ4) Decompress(ctx context.Context, data [][]byte) ([][]byte, error) {
	return each(ctx, data, func(src []byte) ([]byte, error) {
		r := l.readers.Get().(*lz4.Reader)
		defer l.readers.Put(r)
		r.Reset(bytes.NewReader(src))
		out, err := readCapped(r, 4*len(src))
		if err != nil {
			return nil, fmt.Errorf("lz4: %w", err)
		}
		return out, nil
	})
}

// Zstd is codec 4 on klauspost/compress/zstd. One encoder and one decoder
// serve every call: their EncodeAll and DecodeAll are safe for concurrent use.
type Zstd struct {
	once sync.Once
	enc  *zstd.Encoder
	dec  *zstd.Decoder
	err  error
}

// NewZstd returns the zstd codec; its encoder and decoder are made on first use.
func NewZstd() *Zstd { return &Zstd{} }

func (*Zstd) Name() string { return "zstd" }
func (*Zstd) ID() int8     { return IDZstd }

func (z *Zstd) init() error {
	z.once.Do(func() {
		z.enc, z.err = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true))
		if z.err != nil {
			return
		}
		z.dec, z.err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(MaxDecompressed))
	})
	if z.err != nil {
		return fmt.Errorf("zstd: %w", z.err)
	}
	return nil
}

func (z *Zstd) Compress(ctx context.Context, records [][]byte) ([][]byte, error) {
	if err := z.init(); err != nil {
		return nil, err
	}
	return each(ctx, records, func(src []byte) ([]byte, error) {
		return z.enc.EncodeAll(src, make([]byte, 0, len(src)/2+64)), nil
	})
}

func (z *Zstd) Decompress(ctx context.Context, data [][]byte) ([][]byte, error) {
	if err := z.init(); err != nil {
		return nil, err
	}
	return each(ctx, data, func(src []byte) ([]byte, error) {
		out, err := z.dec.DecodeAll(src, make([]byte, 0, min(4*len(src), MaxDecompressed)))
		if err != nil {
			if errors.Is(err, zstd.ErrDecoderSizeExceeded) {
				return nil, fmt.Errorf("zstd: decompresses to more than %d bytes", MaxDecompressed)
			}
			return nil, fmt.Errorf("zstd: %w", err)
		}
		return out, nil
	})
}
