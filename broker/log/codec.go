package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// maxDecompressed bounds what one batch may expand to when the log reads its
// records (timestamp lookups), so a hostile batch cannot exhaust memory.
const maxDecompressed = 256 << 20

// xerialHeader starts snappy data framed by the Java client's snappy-java.
var xerialHeader = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// decompress expands the records of a batch compressed with codec.
func decompress(codec int8, src []byte) ([]byte, error) {
	switch codec {
	case 0:
		return src, nil
	case 1:
		r, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, err
		}
		return readBounded(r)
	case 2:
		return decodeSnappy(src)
	case 3:
		return readBounded(lz4.NewReader(bytes.NewReader(src)))
	case 4:
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxDecompressed))
		if err != nil {
			return nil, err
		}
		defer d.Close()
		return d.DecodeAll(src, nil)
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}

// compress encodes records with codec for a batch the cleaner rewrote; like
// names a batch body that used the codec before: snappy keeps its framing
// (xerial, as Java clients write, or raw blocks). lz4 writes 64 KiB blocks
// without checksums and zstd single frames, as Kafka's clients do.
func compress(codec int8, raw, like []byte) ([]byte, error) {
	var buf bytes.Buffer
	switch codec {
	case 0:
		return raw, nil
	case 1:
		w := gzip.NewWriter(&buf)
		if _, err := w.Write(raw); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case 2:
		if bytes.HasPrefix(like, xerialHeader) {
			return xerial.Encode(nil, raw), nil
		}
		return snappy.Encode(nil, raw), nil
	case 3:
		w := lz4.NewWriter(&buf)
		if err := w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false)); err != nil {
			return nil, err
		}
		if _, err := w.Write(raw); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case 4:
		e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true))
		if err != nil {
			return nil, err
		}
		out := e.EncodeAll(raw, nil)
		return out, e.Close()
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}

func readBounded(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxDecompressed+1))
	if err == nil && len(b) > maxDecompressed {
		err = fmt.Errorf("batch expands past %d bytes", maxDecompressed)
	}
	return b, err
}

// decodeSnappy reads raw snappy blocks and the xerial framing (header, then
// blocks each prefixed by a big-endian int32 length).
func decodeSnappy(src []byte) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialHeader) {
		return decodeSnappyBlock(nil, src)
	}
	const headerLen = 16 // magic, version, compatible version
	if len(src) < headerLen {
		return nil, errors.New("short xerial snappy header")
	}
	var out []byte
	for rest := src[headerLen:]; len(rest) > 0; {
		if len(rest) < 4 {
			return nil, errors.New("torn xerial snappy block length")
		}
		n := int(binary.BigEndian.Uint32(rest))
		rest = rest[4:]
		if n < 0 || n > len(rest) {
			return nil, errors.New("torn xerial snappy block")
		}
		var err error
		if out, err = decodeSnappyBlock(out, rest[:n]); err != nil {
			return nil, err
		}
		rest = rest[n:]
	}
	return out, nil
}

func decodeSnappyBlock(dst, block []byte) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return nil, err
	}
	if n > maxDecompressed || len(dst)+n > maxDecompressed {
		return nil, fmt.Errorf("batch expands past %d bytes", maxDecompressed)
	}
	b, err := snappy.Decode(nil, block)
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}
