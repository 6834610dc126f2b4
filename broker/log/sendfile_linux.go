package log

import (
	"errors"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxSendfileChunk keeps each sendfile call below the kernel's per-call cap.
const maxSendfileChunk = 1 << 30

// sendfile copies [pos, pos+n) of src to dst with sendfile(2) and an explicit
// offset, leaving src's file position alone. handled is false when dst or
// src offer no file descriptor, and the caller copies instead.
func sendfile(dst syscall.Conn, src *os.File, pos, n int64) (written int64, handled bool, err error) {
	drc, err := dst.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	srcRC, err := src.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	off := pos
	var serr error
	cerr := srcRC.Control(func(sfd uintptr) {
		werr := drc.Write(func(dfd uintptr) bool {
			for written < n {
				k, err := unix.Sendfile(int(dfd), int(sfd), &off, int(min(n-written, maxSendfileChunk)))
				if k > 0 {
					written += int64(k)
				}
				switch {
				case errors.Is(err, unix.EAGAIN):
					return false // wait until dst is writable
				case errors.Is(err, unix.EINTR):
					continue
				case err != nil:
					serr = err
					return true
				case k == 0:
					serr = io.ErrUnexpectedEOF
					return true
				}
			}
			return true
		})
		if serr == nil {
			serr = werr
		}
	})
	return written, true, errors.Join(serr, cerr)
}
