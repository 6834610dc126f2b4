package batch

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/plugins/codec"
)

// Codecs finds the codec for a Kafka codec id. The plugin catalog is the one
// in production (external plugins override built-ins, which run in process);
// codec.Set serves the built-ins alone.
type Codecs interface {
	CodecByID(ctx context.Context, id int8) (codec.Codec, error)
}

// DecompressFactor is how many times max.message.bytes a batch's records may
// decompress to by default (message.decompression.max.ratio). A client fills
// its batches up to about max.message.bytes of compressed bytes, so this
// leaves room for highly compressible records while a bomb stops after a
// bounded amount of work.
const DecompressFactor = 32

// DecompressLimit is the most a records section may expand to on a topic
// whose max.message.bytes is maxMessageBytes, ratio times it (ratio 0 or
// less: DecompressFactor), and never more than codec.MaxDecompressed
// (maxMessageBytes 0 or less: that).
func DecompressLimit(maxMessageBytes, ratio int) int {
	if ratio <= 0 {
		ratio = DecompressFactor
	}
	if maxMessageBytes <= 0 || maxMessageBytes > codec.MaxDecompressed/ratio {
		return codec.MaxDecompressed
	}
	return maxMessageBytes * ratio
}

// codecError wraps a codec's failure as Kafka reports it: too much output is
// MESSAGE_TOO_LARGE, anything else CORRUPT_MESSAGE.
func codecError(h Header, name string, err error) error {
	if errors.Is(err, codec.ErrTooLarge) {
		return fmt.Errorf("batch %d: %s: %w: %w", h.BaseOffset, name, kerr.MessageTooLarge, err)
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return err
	}
	return fmt.Errorf("batch %d: %s: %w: %w", h.BaseOffset, name, kerr.CorruptMessage, err)
}

func lookup(ctx context.Context, codecs Codecs, h Header) (codec.Codec, error) {
	id := h.Compression()
	if id > codec.IDZstd {
		return nil, fmt.Errorf("batch %d: compression codec %d: %w", h.BaseOffset, id, kerr.UnsupportedCompressionType)
	}
	if codecs == nil {
		return nil, fmt.Errorf("batch %d: no codecs to read %s: %w", h.BaseOffset, codec.NameForID(id), kerr.UnsupportedCompressionType)
	}
	c, err := codecs.CodecByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("batch %d: %w: %w", h.BaseOffset, kerr.UnsupportedCompressionType, err)
	}
	return c, nil
}

// Section returns the records section of the whole batch b with header h,
// decompressed into at most limit bytes (the section itself, not a copy,
// when uncompressed).
func Section(ctx context.Context, codecs Codecs, h Header, b []byte, limit int) ([]byte, error) {
	section := b[HeaderSize:h.Size()]
	if h.Compression() == codec.IDNone {
		return section, nil
	}
	c, err := lookup(ctx, codecs, h)
	if err != nil {
		return nil, err
	}
	out, err := c.Decompress(ctx, [][]byte{section}, limit)
	if err != nil {
		return nil, codecError(h, c.Name(), err)
	}
	if len(out) != 1 {
		return nil, fmt.Errorf("batch %d: codec %s returned %d sections for 1: %w", h.BaseOffset, c.Name(), len(out), kerr.CorruptMessage)
	}
	return out[0], nil
}

// Records decompresses the whole batch b (header h) into at most limit bytes
// and walks its records as EachRecord does. The records fn sees stay valid
// after it returns.
func Records(ctx context.Context, codecs Codecs, h Header, b []byte, limit int, fn func(Record) error) error {
	section, err := Section(ctx, codecs, h, b, limit)
	if err != nil {
		return err
	}
	return EachRecord(h, section, fn)
}

// records is Records parsing each record into *r before calling fn.
func records(ctx context.Context, codecs Codecs, h Header, b []byte, limit int, r *Record, fn func() error) error {
	section, err := Section(ctx, codecs, h, b, limit)
	if err != nil {
		return err
	}
	return eachRecord(h, section, r, fn)
}

// Scan walks the records of the whole batch b (header h) like Records, but a
// compressed section from an in-process codec is streamed: records are
// checked as they come out, so a batch stops at its first bad record and
// memory holds one record, never the section. The Record fn sees is valid
// only during the call, and its Raw is nil when streamed.
func Scan(ctx context.Context, codecs Codecs, h Header, b []byte, limit int, fn func(Record) error) error {
	var r Record
	return scan(ctx, codecs, h, b, limit, &r, func() error { return fn(r) })
}

// scan is Scan parsing each record into *r before calling fn (CheckProduce's
// walk: see eachRecord).
func scan(ctx context.Context, codecs Codecs, h Header, b []byte, limit int, r *Record, fn func() error) error {
	if h.Compression() == codec.IDNone {
		return eachRecord(h, b[HeaderSize:h.Size()], r, fn)
	}
	c, err := lookup(ctx, codecs, h)
	if err != nil {
		return err
	}
	s, ok := c.(codec.Streamer)
	if !ok {
		return records(ctx, codecs, h, b, limit, r, fn)
	}
	rc, err := s.NewReader(b[HeaderSize:h.Size()])
	if err != nil {
		return codecError(h, c.Name(), err)
	}
	defer rc.Close()
	return scanStream(ctx, h, c.Name(), &capped{r: rc, left: int64(codec.Limit(limit))}, r, fn)
}

// capped fails with codec.ErrTooLarge once more than left bytes come out.
type capped struct {
	r    io.Reader
	left int64
}

func (c *capped) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n, fmt.Errorf("decompresses past its limit: %w", codec.ErrTooLarge)
	}
	return n, err
}

func scanStream(ctx context.Context, h Header, name string, src *capped, r *Record, fn func() error) error {
	br := bufio.NewReaderSize(src, 32<<10)
	w := recordWalk{h: h, last: -1}
	r.Raw = nil
	var buf []byte
	for w.n < h.NumRecords {
		if w.n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		length, err := readVarint(br)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return streamError(h, name, w.n, err)
		}
		if length < minRecordLength {
			return fmt.Errorf("record %d of batch %d: length %d is below a record's %d: %w", w.n, h.BaseOffset, length, minRecordLength, kerr.InvalidRecord)
		}
		if length > src.left+int64(br.Buffered()) || length > math.MaxInt32 {
			return fmt.Errorf("record %d of batch %d: length %d would decompress past the limit: %w", w.n, h.BaseOffset, length, kerr.MessageTooLarge)
		}
		if int64(cap(buf)) < length {
			buf = make([]byte, length)
		}
		body := buf[:length]
		if _, err := io.ReadFull(br, body); err != nil {
			return streamError(h, name, w.n, err)
		}
		if err := parseBody(r, body); err != nil {
			return fmt.Errorf("record %d of batch %d: %w", w.n, h.BaseOffset, err)
		}
		if err := w.next(r); err != nil {
			return err
		}
		if err := fn(); err != nil {
			return err
		}
	}
	trailing := 0
	if _, err := br.ReadByte(); err == nil {
		trailing = 1 + br.Buffered()
	} else if !errors.Is(err, io.EOF) {
		return streamError(h, name, w.n, err)
	}
	return w.done(trailing)
}

// streamError reports a failure reading record n: a torn record is
// INVALID_RECORD, a codec failure goes through codecError.
func streamError(h Header, name string, n int32, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("record %d of batch %d is cut short: %w", n, h.BaseOffset, kerr.InvalidRecord)
	}
	if errors.Is(err, errVarint) {
		return fmt.Errorf("record %d of batch %d: length is not a varint: %w", n, h.BaseOffset, kerr.InvalidRecord)
	}
	return codecError(h, name, err)
}

var errVarint = errors.New("varint longer than 64 bits")

// readVarint reads a zigzag varint; a varint cut short is io.ErrUnexpectedEOF.
func readVarint(br *bufio.Reader) (int64, error) {
	var ux uint64
	for i := range binary.MaxVarintLen64 {
		b, err := br.ReadByte()
		if err != nil {
			if i > 0 && errors.Is(err, io.EOF) {
				return 0, io.ErrUnexpectedEOF
			}
			return 0, err
		}
		if i == binary.MaxVarintLen64-1 && b > 1 {
			return 0, errVarint
		}
		ux |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return int64(ux>>1) ^ -int64(ux&1), nil
		}
	}
	return 0, errVarint
}

// Compress encodes one records section with codec id (IDNone: the section itself).
func Compress(ctx context.Context, codecs Codecs, id int8, section []byte) ([]byte, error) {
	if id == codec.IDNone {
		return section, nil
	}
	c, err := lookup(ctx, codecs, Header{Attributes: int16(id)})
	if err != nil {
		return nil, err
	}
	out, err := c.Compress(ctx, [][]byte{section})
	if err != nil {
		return nil, fmt.Errorf("compressing %s: %w", c.Name(), err)
	}
	if len(out) != 1 {
		return nil, fmt.Errorf("codec %s returned %d sections for 1", c.Name(), len(out))
	}
	return out[0], nil
}
