//go:build !linux

package log

import "os"

// fdatasync is fsync where the system has no fdatasync.
func fdatasync(f *os.File) error { return f.Sync() }
