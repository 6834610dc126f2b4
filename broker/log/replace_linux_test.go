package log

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRewriteCheckpointCreatesNoInode: once a checkpoint and its spare
// exist, rewriting it exchanges the two (the same two inodes every time)
// instead of creating a temporary file and deleting the old one; after each
// rewrite the checkpoint reads the new offset and the spare holds the
// previous one, so a crash at any point leaves one of the two whole. A
// rename of the temporary file over the checkpoint fails it (a new inode
// at every rewrite).
func TestRewriteCheckpointCreatesNoInode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
		t.Skipf("this file system cannot exchange names: %v", err)
	}
	path := filepath.Join(dir, highWatermarkFile)
	spare := path + spareSuffix
	inode := func(p string) uint64 {
		t.Helper()
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return st.Sys().(*syscall.Stat_t).Ino
	}
	read := func(p string) int64 {
		t.Helper()
		off, ok, err := readOffsetCheckpoint(p)
		if err != nil || !ok {
			t.Fatalf("%s: %d %v %v", p, off, ok, err)
		}
		return off
	}
	for off := int64(1); off <= 2; off++ {
		if err := rewriteCheckpoint(dir, highWatermarkFile, encodeOffsetCheckpoint(dir, off)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(spare); err != nil {
		t.Fatalf("no spare after two rewrites: %v", err)
	}
	inodes := map[uint64]bool{inode(path): true, inode(spare): true}
	for off := int64(3); off <= 6; off++ {
		if err := rewriteCheckpoint(dir, highWatermarkFile, encodeOffsetCheckpoint(dir, off)); err != nil {
			t.Fatal(err)
		}
		if got := read(path); got != off {
			t.Fatalf("checkpoint reads %d, want %d", got, off)
		}
		if got := read(spare); got != off-1 {
			t.Fatalf("spare reads %d, want the previous %d", got, off-1)
		}
		if !inodes[inode(path)] || !inodes[inode(spare)] {
			t.Fatalf("rewrite %d created an inode", off)
		}
	}
	// The log opens over its spare and leaves it for the next rewrite.
	l := openLog(t, dir, testConfig())
	defer l.Close()
	if _, err := os.Stat(spare); err != nil {
		t.Fatalf("spare removed at open: %v", err)
	}
}
