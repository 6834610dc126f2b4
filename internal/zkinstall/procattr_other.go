//go:build !linux

package zkinstall

import "syscall"

// sysProcAttr has no parent-death signal outside Linux; callers stop the
// server themselves.
func sysProcAttr() *syscall.SysProcAttr { return nil }
