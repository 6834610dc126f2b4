package protocol

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// sendfileSender moves file regions to a TCP socket with sendfile(2) and an explicit
// offset, so concurrent fetches of one segment share its descriptor without seeking.
type sendfileSender struct {
	rc  syscall.RawConn
	cpy copySender
}

func newFileSender(c net.Conn) fileSender {
	if tc, ok := c.(*net.TCPConn); ok {
		if rc, err := tc.SyscallConn(); err == nil {
			return &sendfileSender{rc: rc, cpy: copySender{w: c}}
		}
	}
	return copySender{w: c}
}

func (s *sendfileSender) sendFile(f *os.File, off, n int64) error {
	fc, err := f.SyscallConn()
	if err != nil {
		return s.cpy.sendFile(f, off, n)
	}
	var serr error
	cerr := fc.Control(func(infd uintptr) {
		werr := s.rc.Write(func(outfd uintptr) bool {
			for n > 0 {
				chunk := n
				if chunk > 1<<30 {
					chunk = 1 << 30
				}
				w, e := unix.Sendfile(int(outfd), int(infd), &off, int(chunk))
				if w > 0 {
					n -= int64(w)
				}
				switch {
				case errors.Is(e, unix.EAGAIN):
					return false // wait until the socket is writable
				case errors.Is(e, unix.EINTR):
					continue
				case e != nil:
					serr = e
					return true
				case w == 0:
					serr = io.ErrUnexpectedEOF // the file is shorter than the region
					return true
				}
			}
			return true
		})
		if serr == nil {
			serr = werr
		}
	})
	if cerr != nil {
		return cerr
	}
	return serr
}
