package proxy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// A client's upgraded connection (POST /grpc, /session) is handed to
// hutch-buildkit whole instead of copied: the engine sends the socket's
// file descriptor (SCM_RIGHTS) over hutch-buildkit's hand-over socket,
// with the bytes of the request it already read, and is out of the path.
// A build's control API and session make hundreds of round trips; through
// a copying engine each was two more socket hops and two more goroutine
// wake-ups, in the slowest part of a cached build.
//
// The hand-over is one connection to the hand-over socket: a 4-byte
// big-endian length with the descriptor as ancillary data, then that many
// bytes of the request, then the end of the connection.

// maxPreamble bounds the request bytes sent with a connection: the
// request line and headers of an upgrade, and what the client sent after
// them before the answer.
const maxPreamble = 1 << 20

// HandoffPath is the hand-over socket of hutch-buildkit serving socket.
func HandoffPath(socket string) string { return socket + ".handoff" }

// sendConn hands conn, whose first bytes were pre, to the hand-over
// socket at path. On error the connection is still the caller's.
func sendConn(path string, conn *net.UnixConn, pre []byte) error {
	if len(pre) > maxPreamble {
		return fmt.Errorf("hand-over: %d bytes of request", len(pre))
	}
	f, err := conn.File()
	if err != nil {
		return err
	}
	defer f.Close()
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	uc := c.(*net.UnixConn)
	_ = uc.SetDeadline(time.Now().Add(10 * time.Second))
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(pre)))
	if _, _, err := uc.WriteMsgUnix(hdr[:], unix.UnixRights(int(f.Fd())), nil); err != nil {
		return err
	}
	if _, err := uc.Write(pre); err != nil {
		return err
	}
	// The receiver's end of the connection says it has the descriptor.
	if _, err := uc.Read(hdr[:1]); err != io.EOF {
		return fmt.Errorf("hand-over not taken: %v", err)
	}
	return nil
}

// HandoffListener is a net.Listener of the connections handed over on a
// hand-over socket, each reading first the request bytes the engine read.
type HandoffListener struct {
	ln *net.UnixListener
}

// ListenHandoff listens on the hand-over socket at path (the user's
// alone).
func ListenHandoff(path string) (*HandoffListener, error) {
	_ = os.Remove(path)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return &HandoffListener{ln: ln}, nil
}

// Accept returns the next connection handed over; a hand-over that fails
// is dropped (its client sees the connection end).
func (l *HandoffListener) Accept() (net.Conn, error) {
	for {
		c, err := l.ln.AcceptUnix()
		if err != nil {
			return nil, err
		}
		conn, err := receiveConn(c)
		c.Close()
		if err == nil {
			return conn, nil
		}
	}
}

func (l *HandoffListener) Close() error   { return l.ln.Close() }
func (l *HandoffListener) Addr() net.Addr { return l.ln.Addr() }

// receiveConn reads one hand-over from c.
func receiveConn(c *net.UnixConn) (net.Conn, error) {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	var hdr [4]byte
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, _, _, err := c.ReadMsgUnix(hdr[:], oob)
	if err != nil {
		return nil, err
	}
	fds, err := rights(oob[:oobn])
	if err != nil {
		return nil, err
	}
	if len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("hand-over: %d descriptors", len(fds))
	}
	f := os.NewFile(uintptr(fds[0]), "handed-over")
	defer f.Close()
	if _, err := io.ReadFull(c, hdr[n:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(hdr[:])
	if size > maxPreamble {
		return nil, fmt.Errorf("hand-over: %d bytes of request", size)
	}
	pre := make([]byte, size)
	if _, err := io.ReadFull(c, pre); err != nil {
		return nil, err
	}
	conn, err := net.FileConn(f)
	if err != nil {
		return nil, err
	}
	return &preConn{Conn: conn, r: io.MultiReader(bytes.NewReader(pre), conn)}, nil
}

func rights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for i := range msgs {
		got, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			continue
		}
		fds = append(fds, got...)
	}
	if len(fds) == 0 {
		return nil, errors.New("hand-over without a descriptor")
	}
	return fds, nil
}

// preConn reads pre, then the connection.
type preConn struct {
	net.Conn
	r io.Reader
}

func (c *preConn) Read(b []byte) (int, error) { return c.r.Read(b) }
