package protocol

import (
	"bufio"
	"encoding/binary"
	"io"
	"os"
)

// Body is a response body made of byte chunks and file regions, written in order.
// File regions are released once written (or dropped).
type Body struct {
	parts []part
	size  int64
}

type part struct {
	b      []byte
	f      *os.File
	off, n int64
	owner  RegionOwner
}

// RegionOwner holds a file region of a Body: Release is called once the
// region has been written or the body is dropped, SendFailed with the error
// when the region could not be sent, a read error of the file (a failing
// disk's EIO, which sendfile meets midway) or the connection's write error,
// for it to tell apart. An interface rather than two funcs so that a caller
// passes what it already has (a fetch's partition entry) and allocates no
// closures per region.
type RegionOwner interface {
	Release()
	SendFailed(error)
}

// Bytes appends a chunk of bytes (not copied: the caller must not reuse b).
func (b *Body) Bytes(p []byte) {
	if len(p) == 0 {
		return
	}
	// Merge consecutive byte chunks so the writer issues fewer calls.
	if k := len(b.parts); k > 0 && b.parts[k-1].f == nil {
		b.parts[k-1].b = append(b.parts[k-1].b, p...)
	} else {
		b.parts = append(b.parts, part{b: p})
	}
	b.size += int64(len(p))
}

// File appends the region [off, off+n) of f, held by owner (may be nil).
func (b *Body) File(f *os.File, off, n int64, owner RegionOwner) {
	if n == 0 {
		if owner != nil {
			owner.Release()
		}
		return
	}
	b.parts = append(b.parts, part{f: f, off: off, n: n, owner: owner})
	b.size += n
}

// Size is the body's length in bytes.
func (b *Body) Size() int64 { return b.size }

// Release drops the file regions without writing them.
func (b *Body) Release() {
	for i := range b.parts {
		if o := b.parts[i].owner; o != nil {
			b.parts[i].owner = nil
			o.Release()
		}
	}
}

// writeFrame writes the 4-byte size, the header and the body. File regions go through
// sf, which uses sendfile when the destination is a TCP socket.
func writeFrame(w *bufio.Writer, sf fileSender, header []byte, body *Body) (int64, error) {
	defer body.Release()
	var sz [4]byte
	total := int64(len(header)) + body.size
	binary.BigEndian.PutUint32(sz[:], uint32(total))
	if _, err := w.Write(sz[:]); err != nil {
		return 0, err
	}
	if _, err := w.Write(header); err != nil {
		return 0, err
	}
	for i := range body.parts {
		p := &body.parts[i]
		if p.f == nil {
			if _, err := w.Write(p.b); err != nil {
				return 0, err
			}
			continue
		}
		if err := w.Flush(); err != nil {
			return 0, err
		}
		if err := sf.sendFile(p.f, p.off, p.n); err != nil {
			if p.owner != nil {
				p.owner.SendFailed(err)
			}
			return 0, err
		}
		if p.owner != nil {
			p.owner.Release()
			p.owner = nil
		}
	}
	return 4 + total, nil
}

// fileSender copies a file region to the connection.
type fileSender interface {
	sendFile(f *os.File, off, n int64) error
}

// copySender is the portable fallback: pread into a small buffer and write.
type copySender struct{ w io.Writer }

func (c copySender) sendFile(f *os.File, off, n int64) error {
	_, err := io.Copy(c.w, io.NewSectionReader(f, off, n))
	return err
}

// WriteTo copies the body to w (byte chunks, then file regions read with pread),
// without releasing it: for writers that are not a socket, and for tests.
func (b *Body) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for _, p := range b.parts {
		var m int64
		var err error
		if p.f == nil {
			var k int
			k, err = w.Write(p.b)
			m = int64(k)
		} else {
			m, err = io.Copy(w, io.NewSectionReader(p.f, p.off, p.n))
		}
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
