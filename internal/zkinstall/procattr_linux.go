package zkinstall

import "syscall"

// sysProcAttr makes the kernel kill the server when its parent dies, so a
// crashed test or supervisor leaves no ZooKeeper behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
