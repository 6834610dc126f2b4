//go:build !linux

package brokerproc

import "syscall"

func procAttr() *syscall.SysProcAttr { return nil }
