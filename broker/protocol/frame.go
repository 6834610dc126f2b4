package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrFrameTooLarge is returned for a size prefix above the configured maximum.
var ErrFrameTooLarge = errors.New("request frame too large")

// ReadFrame reads one size-prefixed frame. The size is checked before any
// allocation, so a hostile 2 GiB prefix costs nothing.
func ReadFrame(r io.Reader, maxSize int32) ([]byte, error) {
	n, err := readSize(r, maxSize, "socket.request.max.bytes")
	if err != nil {
		return nil, err
	}
	return readBody(r, n)
}

// readSize reads a frame's size prefix and checks it against limit (named by what).
func readSize(r io.Reader, limit int32, what string) (int, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return 0, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	if n < 0 || n > limit {
		return 0, fmt.Errorf("%w: %d bytes (limit %d, %s)", ErrFrameTooLarge, n, limit, what)
	}
	return int(n), nil
}

// eagerFrame is the largest frame whose buffer is allocated before its bytes
// arrive; a larger one is read in chunks of this size as data comes in, so a
// connection that announces 100 MiB and sends half holds 50 MiB (not 100, nor
// the 64 + 32 + 16... a doubling buffer leaves behind).
const eagerFrame = 1 << 20

func readBody(r io.Reader, n int) ([]byte, error) { return readBodyCap(r, n, n, nil) }

// readBodyCap is readBody into a buffer of capacity c >= n. grow, when set, is
// called before a buffer for the body's bytes up to upto is taken: the body's
// share of queued.max.request.bytes follows its buffers.
func readBodyCap(r io.Reader, n, c int, grow func(upto int) error) ([]byte, error) {
	if n <= eagerFrame {
		if err := callGrow(grow, n); err != nil {
			return nil, err
		}
		buf := make([]byte, n, c)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return buf, nil
	}
	// The chunks are copied out and given back: they come from the frame
	// pool when it has free buffers of their size, so a large frame costs
	// one new buffer, not one per MiB as well.
	var chunks [][]byte
	defer func() {
		for _, ch := range chunks {
			putFrame(ch)
		}
	}()
	for left := n; left > 0; {
		size := min(left, eagerFrame)
		if err := callGrow(grow, n-left+size); err != nil {
			return nil, err
		}
		ch := getFrame(size)
		if ch == nil {
			ch = make([]byte, size, eagerFrame)
		}
		chunks = append(chunks, ch)
		if _, err := io.ReadFull(r, ch); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		left -= len(ch)
	}
	buf := make([]byte, 0, c)
	for _, ch := range chunks {
		buf = append(buf, ch...)
	}
	return buf, nil
}

func callGrow(grow func(int) error, upto int) error {
	if grow == nil {
		return nil
	}
	return grow(upto)
}

// Header is a decoded request header.
type Header struct {
	Key           int16
	Version       int16
	CorrelationID int32
	ClientID      string
	Flexible      bool // header v2: the response header carries tagged fields too
}

// ParseRequest decodes the header and, when the key and version are known to kmsg,
// the body. known is false for an API key kmsg does not know; err is set for a
// malformed header or body.
func ParseRequest(frame []byte) (h Header, req kmsg.Request, err error) {
	if len(frame) < 8 {
		return h, nil, errors.New("short request header")
	}
	h.Key = int16(binary.BigEndian.Uint16(frame[0:]))
	h.Version = int16(binary.BigEndian.Uint16(frame[2:]))
	h.CorrelationID = int32(binary.BigEndian.Uint32(frame[4:]))
	rd := kbin.Reader{Src: frame[8:]}
	if cid := rd.NullableString(); cid != nil {
		h.ClientID = *cid
	}
	req = kmsg.RequestForKey(h.Key)
	if req == nil {
		return h, nil, fmt.Errorf("unknown API key %d", h.Key)
	}
	if h.Version < 0 || h.Version > req.MaxVersion() {
		// Leave the body unparsed: the caller decides (ApiVersions answers, others close).
		return h, req, errUnsupportedVersion
	}
	req.SetVersion(h.Version)
	h.Flexible = req.IsFlexible()
	if h.Flexible {
		skipTags(&rd)
	}
	if err := rd.Complete(); err != nil {
		return h, req, fmt.Errorf("malformed request header: %w", err)
	}
	if err := req.ReadFrom(rd.Src); err != nil {
		return h, req, fmt.Errorf("malformed %s v%d request: %w", kmsg.NameForKey(h.Key), h.Version, err)
	}
	return h, req, nil
}

var errUnsupportedVersion = errors.New("unsupported version")

// IsUnsupportedVersion reports whether ParseRequest failed only because of the version.
func IsUnsupportedVersion(err error) bool { return errors.Is(err, errUnsupportedVersion) }

func skipTags(rd *kbin.Reader) {
	n := rd.Uvarint()
	for i := uint32(0); i < n && rd.Ok(); i++ {
		rd.Uvarint()
		rd.Span(int(rd.Uvarint()))
	}
}

// AppendResponseHeader appends the response header for h: the correlation id, plus an
// empty tag buffer for flexible versions. ApiVersions always uses header v0 (KIP-511).
func AppendResponseHeader(dst []byte, h Header) []byte {
	dst = kbin.AppendInt32(dst, h.CorrelationID)
	if h.Flexible && h.Key != 18 {
		dst = append(dst, 0)
	}
	return dst
}
