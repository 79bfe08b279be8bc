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
)

// Dial connects to the keeper of the daemon whose state dir is stateDir.
// An error means none runs there (a socket a killed keeper left behind
// refuses the connection).
func Dial(stateDir string) (*net.UnixConn, error) {
	addr := &net.UnixAddr{Name: filepath.Join(stateDir, SocketName), Net: "unix"}
	return net.DialUnix("unix", nil, addr)
}

// Engine is an engine a keeper runs for this client.
type Engine struct {
	// PID is the engine's process id (the host's: no pid namespace).
	PID  int
	conn *net.UnixConn
	dec  *json.Decoder
}

// ErrKeeperGone is returned by Start when the keeper closed the
// connection before it started the engine: it was ending because no
// container ran. A new keeper can be started.
var ErrKeeperGone = errors.New("the keeper ended before it started the engine")

// Start asks the keeper on conn to run req's engine with stdio (stdin,
// stdout, stderr) and returns once it runs. conn belongs to the Engine
// from then on: closing it (or this process's death) kills the engine.
func Start(conn *net.UnixConn, req Request, stdio [3]*os.File) (*Engine, error) {
	req.V = Version
	if req.Op == "" {
		req.Op = "run"
	}
	if err := sendFiles(conn, stdio[:]); err != nil {
		conn.Close()
		return nil, gone(err)
	}
	if err := writeJSON(conn, req); err != nil {
		conn.Close()
		return nil, gone(err)
	}
	e := &Engine{conn: conn, dec: json.NewDecoder(bufio.NewReader(conn))}
	var r Reply
	if err := e.dec.Decode(&r); err != nil {
		conn.Close()
		return nil, gone(err)
	}
	if r.Err != "" {
		conn.Close()
		if r.V != Version {
			return nil, fmt.Errorf("%w: %s", ErrVersion, r.Err)
		}
		return nil, errors.New(r.Err)
	}
	if r.PID <= 0 {
		conn.Close()
		return nil, fmt.Errorf("keeper answered no pid: %+v", r)
	}
	e.PID = r.PID
	return e, nil
}

// gone maps the errors of a connection the keeper closed to ErrKeeperGone.
func gone(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isConnReset(err) {
		return fmt.Errorf("%w (%v)", ErrKeeperGone, err)
	}
	return err
}

// Wait returns the engine's exit status (128+signal when a signal ended
// it) once it exits.
func (e *Engine) Wait() (int, error) {
	defer e.conn.Close()
	var r Reply
	for {
		if err := e.dec.Decode(&r); err != nil {
			return 0, fmt.Errorf("the keeper ended while the engine ran: %w", err)
		}
		if r.Err != "" {
			return 0, errors.New(r.Err)
		}
		if r.Exit != nil {
			return *r.Exit, nil
		}
	}
}
