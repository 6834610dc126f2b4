package codec

import (
	"bytes"
	"context"
	"encoding/binary"
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

func (g *Gzip) Decompress(ctx context.Context, data [][]byte, limit int) ([][]byte, error) {
	return decompressAll(ctx, g, "gzip", data, limit)
}

// NewReader streams one gzip section.
func (g *Gzip) NewReader(section []byte) (io.ReadCloser, error) {
	r, _ := g.readers.Get().(*gzip.Reader)
	var err error
	if r == nil {
		r, err = gzip.NewReader(bytes.NewReader(section))
	} else {
		err = r.Reset(bytes.NewReader(section))
	}
	if err != nil {
		return nil, err
	}
	return &pooled{Reader: r, done: func() { g.readers.Put(r) }}, nil
}

// pooled hands a pooled decoder back when its reader is closed.
type pooled struct {
	io.Reader
	done func()
}

func (p *pooled) Close() error {
	if p.done != nil {
		p.done()
		p.done = nil
	}
	return nil
}

// Snappy is codec 2. It writes the xerial framing Kafka's Java client writes
// (32 KiB snappy blocks behind a 16-byte header) and reads both that framing
// and a bare snappy block, which some clients send.
type Snappy struct{}

// xerialBlock is the block size of xerial framing as Java's snappy-java writes it.
const xerialBlock = 32 << 10

// xerialHeaderSize is the magic, version and compatible version before the blocks.
const xerialHeaderSize = 16

var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// NewSnappy returns the snappy codec.
func NewSnappy() *Snappy { return &Snappy{} }

func (*Snappy) Name() string { return "snappy" }
func (*Snappy) ID() int8     { return IDSnappy }

func (*Snappy) Compress(ctx context.Context, records [][]byte) ([][]byte, error) {
	return each(ctx, records, func(src []byte) ([]byte, error) {
		blocks := len(src)/xerialBlock + 1
		return xerial.Encode(make([]byte, 0, xerialHeaderSize+blocks*(4+s2.MaxEncodedLen(xerialBlock))), src), nil
	})
}

func (s *Snappy) Decompress(ctx context.Context, data [][]byte, limit int) ([][]byte, error) {
	return decompressAll(ctx, s, "snappy", data, limit)
}

// NewReader streams one snappy section block by block; a block's declared
// length is checked against what it can hold before anything is allocated.
func (*Snappy) NewReader(section []byte) (io.ReadCloser, error) {
	r := &snappyReader{}
	if bytes.HasPrefix(section, xerialMagic) {
		if len(section) < xerialHeaderSize {
			return nil, errors.New("short xerial header")
		}
		r.framed, r.rest = true, section[xerialHeaderSize:]
	} else {
		r.rest = section
	}
	return r, nil
}

type snappyReader struct {
	framed bool
	rest   []byte // blocks not yet decoded
	out    []byte // decoded bytes not yet read
	buf    []byte
}

func (r *snappyReader) Read(p []byte) (int, error) {
	for len(r.out) == 0 {
		if len(r.rest) == 0 {
			return 0, io.EOF
		}
		if err := r.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.out)
	r.out = r.out[n:]
	return n, nil
}

func (r *snappyReader) next() error {
	block := r.rest
	if r.framed {
		if len(r.rest) < 4 {
			return errors.New("torn xerial block length")
		}
		n := binary.BigEndian.Uint32(r.rest)
		if uint64(n) > uint64(len(r.rest)-4) {
			return errors.New("torn xerial block")
		}
		block, r.rest = r.rest[4:4+n], r.rest[4+n:]
	} else {
		r.rest = nil
	}
	n, err := s2.DecodedLen(block)
	if err != nil {
		return err
	}
	// A snappy block encodes at most about 21 bytes per input byte (a 3-byte copy of 64) plus its
	// header, so a larger declared length is a lie; refuse it unallocated.
	if n > 24*len(block)+64 || n > MaxDecompressed {
		return fmt.Errorf("snappy block of %d bytes claims %d: %w", len(block), n, ErrTooLarge)
	}
	if cap(r.buf) < n {
		r.buf = make([]byte, n)
	}
	out, err := s2.Decode(r.buf[:n], block)
	if err != nil {
		return err
	}
	r.out = out
	return nil
}

func (*snappyReader) Close() error { return nil }

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

func (l *LZ4) Decompress(ctx context.Context, data [][]byte, limit int) ([][]byte, error) {
	return decompressAll(ctx, l, "lz4", data, limit)
}

// NewReader streams one lz4 frame.
func (l *LZ4) NewReader(section []byte) (io.ReadCloser, error) {
	r := l.readers.Get().(*lz4.Reader)
	r.Reset(bytes.NewReader(section))
	return &pooled{Reader: r, done: func() { l.readers.Put(r) }}, nil
}

// zstdMaxWindow bounds the window a zstd frame may ask a decoder to keep:
// Kafka's clients write frames with windows of a few MiB at most.
const zstdMaxWindow = 32 << 20

// Zstd is codec 4 on klauspost/compress/zstd. One encoder serves every call
// (EncodeAll is safe for concurrent use); decoders stream and are pooled.
type Zstd struct {
	once    sync.Once
	enc     *zstd.Encoder
	err     error
	readers sync.Pool
}

// NewZstd returns the zstd codec; its encoder is made on first use.
func NewZstd() *Zstd { return &Zstd{} }

func (*Zstd) Name() string { return "zstd" }
func (*Zstd) ID() int8     { return IDZstd }

func (z *Zstd) init() error {
	z.once.Do(func() {
		z.enc, z.err = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true))
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

func (z *Zstd) Decompress(ctx context.Context, data [][]byte, limit int) ([][]byte, error) {
	return decompressAll(ctx, z, "zstd", data, limit)
}

// NewReader streams one zstd section with a pooled synchronous decoder.
func (z *Zstd) NewReader(section []byte) (io.ReadCloser, error) {
	d, _ := z.readers.Get().(*zstd.Decoder)
	if d == nil {
		var err error
		d, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxWindow(zstdMaxWindow), zstd.WithDecoderMaxMemory(MaxDecompressed))
		if err != nil {
			return nil, err
		}
	}
	if err := d.Reset(bytes.NewReader(section)); err != nil {
		z.readers.Put(d)
		return nil, err
	}
	return &pooled{Reader: d, done: func() {
		_ = d.Reset(nil)
		z.readers.Put(d)
	}}, nil
}
