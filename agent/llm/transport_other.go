//go:build !linux

package llm

import "net"

func quickAck(c net.Conn) net.Conn { return c }
