package faultfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Op is a set of classes of file system operations.
type Op uint32

const (
	Read  Op = 1 << iota // reading file data
	Write                // writing file data, fallocate, truncation
	Sync                 // fsync and fdatasync, of files and of directories
	Open                 // opening and creating files
	Meta                 // mkdir, rmdir, rename, unlink, link, symlink, mknod, listing a directory, chmod, chown, utimes
	// All is every class: a dead disk. Looking names up, stat and statfs
	// never fail, so the mount stays browsable.
	All = Read | Write | Sync | Open | Meta
)

// Fault says which operations fail and how.
type Fault struct {
	Ops   Op
	Errno syscall.Errno // what they fail with; 0 is EIO
	// Fail of every Every operations in Ops fail, the last Fail of each
	// run of Every (the first Every-Fail succeed); Every 0 fails them all.
	Fail, Every int
	// AfterBytes > 0 lets every operation through until that many bytes
	// have been written since the fault was set. The write that crosses it
	// stores the bytes below it and then fails (a torn write); after it
	// the fault applies as above.
	AfterBytes int64
	// Len > 0 makes a bad sector: only reads and writes touching bytes
	// [At, At+Len) of a file fail; other operations never do.
	At, Len int64
}

// FS is a mounted faulty loopback file system.
type FS struct {
	dir, backing string
	srv          *fuse.Server
	served       chan struct{} // closed when the server has stopped
	conn         uint64        // the connection's number in the FUSE control file system
	closeOnce    sync.Once
	closeErr     error

	nodesMu sync.Mutex
	nodes   map[*node]struct{}

	mu       sync.Mutex
	fault    Fault
	ops      int   // operations in fault.Ops counted since Set (flakey)
	written  int64 // bytes written since Set (AfterBytes)
	injected int   // errors returned since the mount
}

const (
	fsType   = "faultfs" // the mount's type is fuse.faultfs
	maxWrite = 128 << 10
)

// source names the mount after the process serving it, so Sweep can tell
// the mounts whose server died.
func source() string { return fmt.Sprintf("%s.%d", fsType, os.Getpid()) }

// New mounts a faulty loopback of backing on dir (both existing
// directories) and serves it until Close. It needs root.
func New(backing, dir string) (*FS, error) {
	backing, dir = filepath.Clean(backing), filepath.Clean(dir)
	var st syscall.Stat_t
	if err := syscall.Stat(backing, &st); err != nil {
		return nil, err
	}
	// Opened close-on-exec, unlike go-fuse's own direct mount: a broker
	// started by the test must not inherit the connection, or the mount
	// would hang instead of failing once the test process is gone.
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("faultfs: %w", err)
	}
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=%d,group_id=%d,max_read=%d", fd, os.Geteuid(), os.Getegid(), maxWrite)
	if err := unix.Mount(source(), dir, "fuse."+fsType, unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("faultfs: mount on %s: %w", dir, err)
	}
	f := &FS{dir: dir, backing: backing, served: make(chan struct{}), nodes: map[*node]struct{}{}}
	root := &node{LoopbackNode: &fs.LoopbackNode{RootData: &fs.LoopbackRoot{Path: backing, Dev: st.Dev}}, fs: f}
	root.RootData.RootNode = root
	zero := time.Duration(0)
	raw := fs.NewNodeFS(root, &fs.Options{EntryTimeout: &zero, AttrTimeout: &zero, NegativeTimeout: &zero})
	// The magic /dev/fd/N mount point hands go-fuse the connection mounted
	// above.
	srv, err := fuse.NewServer(raw, fmt.Sprintf("/dev/fd/%d", fd), &fuse.MountOptions{
		MaxWrite: maxWrite, Name: fsType, FsName: source(), DisableXAttrs: true,
	})
	if err != nil {
		unix.Unmount(dir, unix.MNT_DETACH)
		return nil, fmt.Errorf("faultfs: serving %s: %w", dir, err)
	}
	f.srv = srv
	go func() {
		defer close(f.served)
		srv.Serve()
	}()
	if err := srv.WaitMount(); err != nil {
		f.Close()
		return nil, err
	}
	// go-fuse's poll hack, which it skips for a /dev/fd/N mount: one POLL
	// now, answered ENOSYS, and the kernel sends no more. Otherwise the
	// first one comes when the runtime's epoll of a process with a file on
	// the mount polls it, and if the server cannot answer then (its process
	// exiting), that thread waits for ever: a test binary was found hung
	// so, a zombie with its last thread in fuse_file_poll.
	if err := pollOnce(filepath.Join(dir, ".go-fuse-epoll-hack")); err != nil {
		f.Close()
		return nil, fmt.Errorf("faultfs: %w", err)
	}
	// One close now, while the server runs, teaches the kernel that it
	// answers no FLUSH (file.Flush), so no later close waits for it.
	probe := filepath.Join(dir, ".faultfs-flush-probe")
	if err := errors.Join(os.WriteFile(probe, nil, 0o600), os.Remove(probe)); err != nil {
		f.Close()
		return nil, fmt.Errorf("faultfs: %w", err)
	}
	var mst unix.Stat_t
	if err := unix.Stat(dir, &mst); err != nil {
		f.Close()
		return nil, err
	}
	// The control file system names a connection by its device number, as
	// the kernel encodes it (major << 20 | minor).
	f.conn = uint64(unix.Major(mst.Dev))<<20 | uint64(unix.Minor(mst.Dev))
	return f, nil
}

// Dir is the mount point.
func (f *FS) Dir() string { return f.dir }

// Backing is the directory the mount shows.
func (f *FS) Backing() string { return f.backing }

// Set replaces the fault (Fault{} removes it) and restarts its counts. A
// fault on reads also empties the page cache of every file: sendfile(2)
// reads through it even in direct I/O mode, and must meet the fault too.
func (f *FS) Set(fault Fault) {
	if fault.Errno == 0 {
		fault.Errno = syscall.EIO
	}
	f.mu.Lock()
	f.fault, f.ops, f.written = fault, 0, 0
	f.mu.Unlock()
	if fault.Ops&Read == 0 {
		return
	}
	// Not under f.mu: dropping a page can wait for a read this server
	// answers, and answering takes f.mu.
	f.nodesMu.Lock()
	nodes := make([]*node, 0, len(f.nodes))
	for n := range f.nodes {
		nodes = append(nodes, n)
	}
	f.nodesMu.Unlock()
	for _, n := range nodes {
		if n.StableAttr().Mode&syscall.S_IFMT == syscall.S_IFREG {
			n.NotifyContent(0, 0)
		}
	}
}

// Clear removes the fault: the disk is healthy again.
func (f *FS) Clear() { f.Set(Fault{}) }

// Injected is how many operations failed by a fault since the mount.
func (f *FS) Injected() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.injected
}

// admit decides an operation of class op on the n bytes at off of a file
// (off < 0 for an operation on no bytes): it may go ahead when errno is 0;
// otherwise it must fail with errno, a write after storing its first allow
// bytes.
func (f *FS) admit(op Op, off int64, n int) (allow int, errno syscall.Errno) {
	f.mu.Lock()
	defer f.mu.Unlock()
	flt := f.fault
	written := 0
	if op == Write {
		written = n
	}
	if flt.Ops&op == 0 || flt.Len > 0 && (off < 0 || off+int64(n) <= flt.At || off >= flt.At+flt.Len) {
		f.written += int64(written)
		return n, 0
	}
	if room := flt.AfterBytes - f.written; room > 0 {
		switch {
		case op != Write:
			return n, 0
		case int64(n) <= room:
			f.written += int64(n)
			return n, 0
		default:
			f.written += room
			f.injected++
			return int(room), flt.Errno
		}
	}
	f.ops++
	if flt.Every > 0 && (f.ops-1)%flt.Every < flt.Every-flt.Fail {
		f.written += int64(written)
		return n, 0
	}
	f.injected++
	return 0, flt.Errno
}

// fail is admit for an operation on no bytes of a file.
func (f *FS) fail(op Op) syscall.Errno {
	_, errno := f.admit(op, -1, 0)
	return errno
}

// Close removes the fault and unmounts: lazily when a file is still open
// (a process that has not exited yet). The server stops when the kernel
// drops the mount; if it has not within 2 s, because a mount namespace
// created meanwhile (ip netns exec) holds a private copy of the mount, the
// connection is aborted through the FUSE control file system (mounted on
// /sys/fs/fuse/connections if missing), and every access left fails with
// ENOTCONN.
func (f *FS) Close() error {
	f.closeOnce.Do(func() {
		f.Clear()
		err := unix.Unmount(f.dir, 0)
		if errors.Is(err, unix.EBUSY) {
			err = unix.Unmount(f.dir, unix.MNT_DETACH)
		}
		if err != nil {
			f.closeErr = fmt.Errorf("faultfs: unmount %s: %w", f.dir, err)
			return
		}
		select {
		case <-f.served:
			return
		case <-time.After(2 * time.Second):
		}
		if err := f.abort(); err != nil {
			f.closeErr = fmt.Errorf("faultfs: %s is unmounted, but its server still runs and the connection could not be aborted: %w", f.dir, err)
			return
		}
		select {
		case <-f.served:
		case <-time.After(5 * time.Second):
			f.closeErr = fmt.Errorf("faultfs: %s: the server still runs 5 s after its connection was aborted", f.dir)
		}
	})
	return f.closeErr
}

// abort ends the mount's FUSE connection: each request in flight and to
// come fails, and the server's reads end.
func (f *FS) abort() error {
	const ctl = "/sys/fs/fuse/connections"
	file := filepath.Join(ctl, strconv.FormatUint(f.conn, 10), "abort")
	if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
		if err := unix.Mount("fusectl", ctl, "fusectl", 0, ""); err != nil && !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("mount fusectl on %s: %w", ctl, err)
		}
	}
	return os.WriteFile(file, []byte("1"), 0)
}

// Mount gives a test a faulty loopback of a new temporary directory,
// mounted on another one, and unmounts it when the test ends. Without root
// or /dev/fuse the test is skipped with a loud message; with CI=true a
// mount that fails fails the test.
func Mount(t testing.TB) *FS {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("\n\n*** SKIPPING %s: the failing-disk (FUSE) test did NOT run: it mounts a FUSE file system and needs root (CI runs it as root) ***\n\n", t.Name())
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("faultfs: CI=true as root, but no FUSE device: %v", err)
		}
		t.Skipf("\n\n*** SKIPPING %s: the failing-disk (FUSE) test did NOT run: %v ***\n\n", t.Name(), err)
	}
	sweepOnce.Do(func() {
		if err := Sweep(); err != nil {
			t.Logf("faultfs: detaching stale mounts: %v", err)
		}
	})
	backing, dir := t.TempDir(), t.TempDir()
	f, err := New(backing, dir)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skipf("\n\n*** SKIPPING %s: the failing-disk (FUSE) test did NOT run: %v ***\n\n", t.Name(), err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	})
	return f
}

var sweepOnce sync.Once

// pollOnce opens path and polls it once.
func pollOnce(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLPRI | unix.POLLOUT}}, 0)
	return err
}
