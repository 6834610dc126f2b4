package faultfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Sweep lazily unmounts the mounts of this package whose serving process
// no longer runs (a test that was killed): their connection is aborted, so
// each access fails with ENOTCONN, and they would stay in the mount table.
func Sweep() error {
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range stale(string(mounts)) {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("umount -l %s: %w", m, err))
		}
	}
	return errors.Join(errs...)
}

// stale lists the mount points in mountinfo (proc(5)) of this package's
// mounts whose process is not running.
func stale(mountinfo string) []string {
	var out []string
	for _, line := range strings.Split(mountinfo, "\n") {
		// ID parent major:minor root mountpoint options [optional...] - type source superoptions
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 2 || g[0] != "fuse."+fsType {
			continue
		}
		pid, ok := strings.CutPrefix(g[1], fsType+".")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(pid)
		if err != nil || n <= 0 || n == os.Getpid() || alive(n) {
			continue
		}
		out = append(out, unescape(f[4]))
	}
	return out
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// alive reports whether process pid runs: it exists and is not a zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}
