// Package disktest gives tests real small file systems to fill up: a tmpfs
// of a given size mounted on a new temporary directory. It needs root (mount);
// without it the test is skipped with a loud message saying what did not run.
// Disks that return EIO are internal/faultfs (FUSE): the kernel this project
// is tested on has no device-mapper driver for error or flakey targets
// (dmsetup: /dev/mapper/control: No such device).
package disktest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Tmpfs mounts a tmpfs of size (mount's syntax: "4m") on a new directory
// and unmounts it when the test ends.
func Tmpfs(t testing.TB, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: this disk-fault test mounts a small tmpfs to fill it up and needs root (CI runs it as root)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mount -t tmpfs -o size=%s on %s: %v: %s", size, dir, err, out)
		}
		t.Skipf("SKIPPED: mount -t tmpfs failed here (%v: %s); this disk-fault test did not run", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// Fill writes a file of zeros into dir until the file system is full and
// returns its path; removing it frees the space again.
func Fill(t testing.TB, dir string) string {
	t.Helper()
	path := dir + "/ballast"
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			return path
		}
	}
}

// Resize remounts the tmpfs on dir with a new size: space is freed (or taken)
// without touching the files on it.
func Resize(t testing.TB, dir, size string) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", "remount,size="+size, dir).CombinedOutput(); err != nil {
		t.Fatalf("remount %s with size=%s: %v: %s", dir, size, err, out)
	}
}
