package log

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// exchangeFiles swaps the names tmp and path atomically; exchanged is false,
// with no error, when path does not exist or the file system cannot
// exchange (the caller renames instead).
func exchangeFiles(tmp, path string) (exchanged bool, err error) {
	err = unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		return false, nil
	}
	return false, &os.LinkError{Op: "renameat2", Old: tmp, New: path, Err: err}
}
