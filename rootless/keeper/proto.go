package keeper

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// Version is the protocol's version. A keeper refuses a request of
// another version with an error that names both, so the client can say
// what to do (stop the containers, or start the matching daemon).
const Version = 1

// SocketName is the keeper's socket in the daemon's state dir.
const SocketName = "keeper.sock"

// Request asks the keeper for its namespaces.
type Request struct {
	V int `json:"v"`
	// Op is "enter".
	Op string `json:"op"`
}

// Reply carries what an engine needs to live in the keeper's namespaces.
type Reply struct {
	V int `json:"v"`
	// PID is the keeper's pid (the namespace child's).
	PID int `json:"pid,omitempty"`
	// Env (KEY=value) tells a process inside which part it plays
	// (rootless.InsideEnv).
	Env []string `json:"env,omitempty"`
	Err string   `json:"err,omitempty"`
}

// ErrVersion is a keeper's answer to a request of another version.
var ErrVersion = errors.New("keeper protocol version mismatch")

// recvFiles reads the byte sendFiles wrote and returns its descriptors
// (at most max).
func recvFiles(c *net.UnixConn, max int) ([]*os.File, error) {
	oob := make([]byte, unix.CmsgSpace(max*4))
	buf := make([]byte, 1)
	_, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, err
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, m := range msgs {
		got, err := unix.ParseUnixRights(&m)
		if err != nil {
			return nil, err
		}
		fds = append(fds, got...)
	}
	files := make([]*os.File, 0, len(fds))
	for i, fd := range fds {
		unix.CloseOnExec(fd)
		files = append(files, os.NewFile(uintptr(fd), fmt.Sprintf("client-fd-%d", i)))
	}
	return files, nil
}

func writeJSON(c net.Conn, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = c.Write(append(b, '\n'))
	return err
}
