package llm

import (
	"net"
	"syscall"
)

// quickAckConn turns on TCP_QUICKACK before every read. Linux clears the
// flag whenever it falls back to delayed ACKs, so setting it once is not
// enough; the call costs well under a microsecond.
type quickAckConn struct {
	*net.TCPConn
	raw syscall.RawConn
}

func quickAck(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	return &quickAckConn{TCPConn: tc, raw: raw}
}

func (c *quickAckConn) Read(b []byte) (int, error) {
	_ = c.raw.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_QUICKACK, 1)
	})
	return c.TCPConn.Read(b)
}
