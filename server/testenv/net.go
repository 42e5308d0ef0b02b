package testenv

import (
	"net"
	"sync/atomic"
)

// CountingListener counts in Read the bytes the server reads from its
// connections.
type CountingListener struct {
	net.Listener
	Read *atomic.Int64
}

// Accept accepts a connection whose reads are counted.
func (l CountingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, read: l.Read}, nil
}

type countingConn struct {
	net.Conn
	read *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}
