package protocol

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// failingSender fails every file region with err.
type failingSender struct{ err error }

func (s failingSender) sendFile(*os.File, int64, int64) error { return s.err }

// recorder is a RegionOwner counting what it is told.
type recorder struct {
	released int
	failed   []error
}

func (r *recorder) Release()             { r.released++ }
func (r *recorder) SendFailed(err error) { r.failed = append(r.failed, err) }

// TestFileRegionFailureIsReported: a region that cannot be sent (sendfile
// meeting a disk's EIO) is reported to its owner, so the log dir can go
// offline, and only that region's.
func TestFileRegionFailureIsReported(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "seg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	var r recorder
	var ok Body
	ok.File(f, 0, 100, &r)
	if _, err := writeFrame(bufio.NewWriter(io.Discard), copySender{w: io.Discard}, nil, &ok); err != nil || len(r.failed) != 0 {
		t.Fatalf("a region sent whole: %v, failed told %v", err, r.failed)
	}

	eio := &os.PathError{Op: "sendfile", Path: f.Name(), Err: syscall.EIO}
	var bad Body
	bad.Bytes([]byte("header"))
	bad.File(f, 0, 100, &r)
	if _, err := writeFrame(bufio.NewWriter(io.Discard), failingSender{eio}, nil, &bad); !errors.Is(err, syscall.EIO) {
		t.Fatalf("writeFrame with a failing region: %v, want EIO", err)
	}
	if len(r.failed) != 1 || !errors.Is(r.failed[0], syscall.EIO) {
		t.Fatalf("failed was told %v, want the EIO once", r.failed)
	}
	if r.released != 2 {
		t.Fatalf("%d regions released, want 2", r.released)
	}
}
