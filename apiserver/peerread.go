package apiserver

import (
	"net"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/internal/idle"
)

// headReadLimit bounds how long a hijacked stream waits for its client to
// read the response head.
const headReadLimit = time.Second

// waitHeadRead waits until the client has read what was written on conn,
// a unix socket, or headReadLimit passed. docker-py reads an upgraded
// stream from the socket under its HTTP parser: whatever comes in the same
// read as the response head stays in the parser's buffer and is lost to
// it, so that an attach with logs=1&stream=0, whose output follows the
// head at once, would give it nothing. Docker's server is slow enough
// between head and output that this rarely bites there; here the output
// is written only once the head is gone from the socket's queue (TIOCOUTQ
// counts what the peer has not read yet). Other connections go on at
// once.
func waitHeadRead(conn net.Conn) {
	uc := idle.UnixSocket(conn)
	if uc == nil {
		return
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return
	}
	deadline := time.Now().Add(headReadLimit)
	for delay := 20 * time.Microsecond; ; delay = min(2*delay, 5*time.Millisecond) {
		queued, qerr := 0, error(nil)
		if err := raw.Control(func(fd uintptr) { queued, qerr = unix.IoctlGetInt(int(fd), unix.TIOCOUTQ) }); err != nil || qerr != nil || queued == 0 {
			return
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(delay)
	}
}
