//go:build !linux

package chaos

import "syscall"

func brokerProcAttr() *syscall.SysProcAttr { return nil }
