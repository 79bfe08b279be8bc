package keeper

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

// Dial connects to the keeper of the daemon whose state dir is stateDir.
// An error means none runs there (a socket a killed keeper left behind
// refuses the connection).
func Dial(stateDir string) (*net.UnixConn, error) {
	addr := &net.UnixAddr{Name: filepath.Join(stateDir, SocketName), Net: "unix"}
	return net.DialUnix("unix", nil, addr)
}

// Lease is an engine's hold on the keeper's namespaces.
type Lease struct {
	// UserNS and MountNS are the keeper's namespaces, to setns into.
	UserNS, MountNS *os.File
	Reply
	// Conn is the lease itself: the engine keeps it open while it runs.
	Conn *net.UnixConn
}

// ErrKeeperGone is returned by Enter when the keeper closed the
// connection before it answered: it was ending because no container
// ran. A new keeper can be started.
var ErrKeeperGone = errors.New("the keeper ended before it answered")

// Enter asks the keeper on conn for its namespaces. The lease owns conn.
func Enter(conn *net.UnixConn) (*Lease, error) {
	fail := func(err error) (*Lease, error) {
		conn.Close()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isConnReset(err) {
			return nil, fmt.Errorf("%w (%v)", ErrKeeperGone, err)
		}
		return nil, err
	}
	if err := writeJSON(conn, Request{V: Version, Op: "enter"}); err != nil {
		return fail(err)
	}
	files, err := recvFiles(conn, 2)
	if err != nil {
		return fail(err)
	}
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	var r Reply
	if err := json.NewDecoder(bufio.NewReader(conn)).Decode(&r); err != nil {
		closeAll()
		return fail(err)
	}
	switch {
	case r.Err != "" && r.V != Version:
		closeAll()
		conn.Close()
		return nil, fmt.Errorf("%w: %s", ErrVersion, r.Err)
	case r.Err != "":
		closeAll()
		conn.Close()
		return nil, errors.New(r.Err)
	case len(files) != 2:
		closeAll()
		conn.Close()
		return nil, fmt.Errorf("the keeper sent %d namespace descriptors, want 2", len(files))
	}
	return &Lease{UserNS: files[0], MountNS: files[1], Reply: r, Conn: conn}, nil
}

// Close gives the lease back.
func (l *Lease) Close() {
	l.UserNS.Close()
	l.MountNS.Close()
	l.Conn.Close()
}

func isConnReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
