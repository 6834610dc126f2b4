package brokerproc

import "syscall"

// procAttr kills a broker when the process that started it dies, so an
// aborted test or benchmark leaves no broker behind.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
