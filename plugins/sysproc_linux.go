package plugins

import "syscall"

// sysProcAttr makes the kernel kill a plugin when its host dies, even by
// SIGKILL, so plugins never outlive ktool.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
