package faultfs

import (
	"bytes"
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// node is a loopback node whose operations pass the fault first. Lookup,
// getattr and statfs are the loopback's own and never fail.
type node struct {
	*fs.LoopbackNode
	fs *FS
}

var (
	_ fs.NodeWrapChilder    = (*node)(nil)
	_ fs.NodeOnForgetter    = (*node)(nil)
	_ fs.NodeOpener         = (*node)(nil)
	_ fs.NodeCreater        = (*node)(nil)
	_ fs.NodeSetattrer      = (*node)(nil)
	_ fs.NodeMkdirer        = (*node)(nil)
	_ fs.NodeRmdirer        = (*node)(nil)
	_ fs.NodeUnlinker       = (*node)(nil)
	_ fs.NodeRenamer        = (*node)(nil)
	_ fs.NodeLinker         = (*node)(nil)
	_ fs.NodeSymlinker      = (*node)(nil)
	_ fs.NodeMknoder        = (*node)(nil)
	_ fs.NodeOpendirHandler = (*node)(nil)
	_ fs.NodeReaddirer      = (*node)(nil)
	_ fs.NodeCopyFileRanger = (*node)(nil)
	_ fs.NodeTmpfiler       = (*node)(nil)
)

// WrapChild makes every node of the tree a faulty one, known to the FS
// until the kernel forgets it.
func (n *node) WrapChild(ctx context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	c := &node{LoopbackNode: ops.(*fs.LoopbackNode), fs: n.fs}
	n.fs.nodesMu.Lock()
	n.fs.nodes[c] = struct{}{}
	n.fs.nodesMu.Unlock()
	return c
}

func (n *node) OnForget() {
	n.fs.nodesMu.Lock()
	delete(n.fs.nodes, n)
	n.fs.nodesMu.Unlock()
}

// Open opens in direct I/O mode, so no read is served from the page cache
// without asking the fault.
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if errno := n.fs.fail(Open); errno != 0 {
		return nil, 0, errno
	}
	fh, fuseFlags, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return &file{LoopbackFile: fh.(*fs.LoopbackFile), fs: n.fs}, fuseFlags | fuse.FOPEN_DIRECT_IO, 0
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if errno := n.fs.fail(Open); errno != 0 {
		return nil, nil, 0, errno
	}
	in, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return in, &file{LoopbackFile: fh.(*fs.LoopbackFile), fs: n.fs}, fuseFlags | fuse.FOPEN_DIRECT_IO, 0
}

// Setattr with a size is a truncation, a write; the rest is metadata.
func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	op := Meta
	if _, ok := in.GetSize(); ok {
		op = Write
	}
	if errno := n.fs.fail(op); errno != 0 {
		return errno
	}
	return n.LoopbackNode.Setattr(ctx, f, in, out)
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if errno := n.fs.fail(Meta); errno != 0 {
		return nil, errno
	}
	return n.LoopbackNode.Mkdir(ctx, name, mode, out)
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	if errno := n.fs.fail(Meta); errno != 0 {
		return errno
	}
	return n.LoopbackNode.Rmdir(ctx, name)
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	if errno := n.fs.fail(Meta); errno != 0 {
		return errno
	}
	return n.LoopbackNode.Unlink(ctx, name)
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if errno := n.fs.fail(Meta); errno != 0 {
		return errno
	}
	return n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
}

func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if errno := n.fs.fail(Meta); errno != 0 {
		return nil, errno
	}
	return n.LoopbackNode.Link(ctx, target, name, out)
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if errno := n.fs.fail(Meta); errno != 0 {
		return nil, errno
	}
	return n.LoopbackNode.Symlink(ctx, target, name, out)
}

func (n *node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if errno := n.fs.fail(Meta); errno != 0 {
		return nil, errno
	}
	return n.LoopbackNode.Mknod(ctx, name, mode, rdev, out)
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if errno := n.fs.fail(Meta); errno != 0 {
		return nil, 0, errno
	}
	fh, fuseFlags, errno := n.LoopbackNode.OpendirHandle(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return dir{dirHandle: fh.(dirHandle), fs: n.fs}, fuseFlags, 0
}

func (n *node) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	if errno := n.fs.fail(Meta); errno != 0 {
		return nil, errno
	}
	return n.LoopbackNode.Readdir(ctx)
}

// Tmpfile is refused: the loopback would open it without this package's
// file handle.
func (n *node) Tmpfile(context.Context, uint32, uint32, *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EOPNOTSUPP
}

// CopyFileRange is refused, so the kernel copies through reads and writes
// that meet the fault.
func (n *node) CopyFileRange(context.Context, fs.FileHandle, uint64, *fs.Inode, fs.FileHandle, uint64, uint64, uint64) (uint32, syscall.Errno) {
	return 0, syscall.ENOSYS
}

// file is an open loopback file whose data operations pass the fault first.
type file struct {
	*fs.LoopbackFile
	fs *FS
}

var (
	_ fs.FileReader          = (*file)(nil)
	_ fs.FileWriter          = (*file)(nil)
	_ fs.FileWritever        = (*file)(nil)
	_ fs.FileFsyncer         = (*file)(nil)
	_ fs.FileAllocater       = (*file)(nil)
	_ fs.FilePassthroughFder = (*file)(nil)
	_ fs.FileFlusher         = (*file)(nil)
)

// PassthroughFd refuses FUSE passthrough, in which the kernel would read
// and write the backing file without asking the server.
func (h *file) PassthroughFd() (int, bool) { return -1, false }

// Flush is refused, so the kernel sends no FLUSH again (New closes one
// file to teach it) and close(2) never waits for the server: a test process
// that exits with a file open on a mount it serves would otherwise hang in
// its exit, its server gone. With direct I/O there is nothing to flush.
func (h *file) Flush(context.Context) syscall.Errno { return syscall.ENOSYS }

func (h *file) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if _, errno := h.fs.admit(Read, off, len(buf)); errno != 0 {
		return nil, errno
	}
	return h.LoopbackFile.Read(ctx, buf, off)
}

func (h *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	allow, errno := h.fs.admit(Write, off, len(data))
	if errno == 0 {
		return h.LoopbackFile.Write(ctx, data, off)
	}
	if allow > 0 {
		h.LoopbackFile.Write(ctx, data[:allow], off)
	}
	return 0, errno
}

func (h *file) Writev(ctx context.Context, data [][]byte, off int64) (uint32, syscall.Errno) {
	return h.Write(ctx, bytes.Join(data, nil), off)
}

func (h *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	if errno := h.fs.fail(Sync); errno != 0 {
		return errno
	}
	return h.LoopbackFile.Fsync(ctx, flags)
}

func (h *file) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	if errno := h.fs.fail(Write); errno != 0 {
		return errno
	}
	return h.LoopbackFile.Allocate(ctx, off, size, mode)
}

// dirHandle is what the loopback's directory handle does.
type dirHandle interface {
	fs.FileHandle
	fs.FileReaddirenter
	fs.FileReleasedirer
	fs.FileSeekdirer
	fs.FileFsyncdirer
}

// dir is an open directory whose fsync passes the fault first.
type dir struct {
	dirHandle
	fs *FS
}

func (d dir) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	if errno := d.fs.fail(Sync); errno != 0 {
		return errno
	}
	return d.dirHandle.Fsyncdir(ctx, flags)
}
