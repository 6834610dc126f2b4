//go:build !linux

package protocol

import "net"

func newFileSender(c net.Conn) fileSender { return copySender{w: c} }
