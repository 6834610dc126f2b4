package chaos

import "syscall"

// brokerProcAttr kills a broker when the test process dies, so an aborted
// test leaves no broker behind.
func brokerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
