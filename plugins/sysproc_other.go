//go:build !linux

package plugins

import "syscall"

// sysProcAttr: outside linux there is no parent-death signal; Catalog.Close
// and go-plugin's own cleanup stop plugins.
func sysProcAttr() *syscall.SysProcAttr { return nil }
