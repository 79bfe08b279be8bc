package apiserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"

	"github.com/hutch-engine/hutch/engine"
)

// ExecBackend runs processes in running containers (docker exec).
type ExecBackend interface {
	// ExecCreate registers an exec instance and returns its id.
	ExecCreate(ctx context.Context, ref string, req containertypes.ExecCreateRequest) (string, error)
	// ExecStart runs it: attached, until the process ended; detached,
	// until it runs.
	ExecStart(ctx context.Context, id string, req engine.ExecStartRequest, stdin io.Reader, stdout, stderr io.Writer) error
	ExecInspect(ctx context.Context, id string) (containertypes.ExecInspectResponse, error)
	ExecResize(ctx context.Context, id string, height, width uint16) error
}

func (s *Server) execCreate(w http.ResponseWriter, r *http.Request) error {
	var req containertypes.ExecCreateRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if versionLess(APIVersion(r.Context()), "1.42") {
		req.ConsoleSize = nil
	}
	id, err := s.backend.ExecCreate(r.Context(), r.PathValue("id"), req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, containertypes.ExecCreateResponse{ID: id})
}

// execStart runs an exec. Detached it answers 200 once the process runs.
// Attached it hijacks the connection like attach: multiplexed without a
// tty, raw with one. The head goes out once the engine accepted the start
// (before that, an unknown exec or a stopped container get a plain error
// answer); later failures (a command that does not exist) are written into
// the stream, as Docker does, so the CLI prints them and reads the exit
// code.
func (s *Server) execStart(w http.ResponseWriter, r *http.Request) error {
	var req containertypes.ExecStartRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if !req.Tty || versionLess(APIVersion(r.Context()), "1.42") {
		req.ConsoleSize = nil
	}
	id := r.PathValue("id")
	start := engine.ExecStartRequest{Detach: req.Detach, ConsoleSize: req.ConsoleSize}
	if req.Detach {
		if err := s.backend.ExecStart(r.Context(), id, start, nil, nil, nil); err != nil {
			return err
		}
		w.WriteHeader(http.StatusOK)
		return nil
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		return errdefs.ErrNotImplemented.WithMessage("connection cannot be hijacked")
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return err
	}
	defer conn.Close()
	ct := "application/vnd.docker.raw-stream"
	if !req.Tty && !versionLess(APIVersion(r.Context()), "1.42") {
		ct = "application/vnd.docker.multiplexed-stream"
	}
	head := "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\n\r\n"
	upgraded := r.Header.Get("Upgrade") != ""
	if upgraded {
		head = fmt.Sprintf("HTTP/1.1 101 UPGRADED\r\nContent-Type: %s\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n", ct)
	}
	out := &headWriter{conn: conn, head: head, upgraded: upgraded}
	stdout, stderr := streams(out, req.Tty)
	start.Ready = out.sendHead
	stdin := io.MultiReader(bufferedPart(buf.Reader), conn)
	err = s.backend.ExecStart(r.Context(), id, start, stdin, stdout, stderr)
	if err != nil && !out.sent() {
		httpErrorRaw(conn, err)
		return nil
	}
	if err != nil {
		fmt.Fprintf(stdout, "%v\r\n", err)
	}
	out.sendHead()
	endHijacked(conn)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		s.log.Debug("exec ended", "exec", id, "err", err)
	}
	return nil
}

func (s *Server) execInspect(w http.ResponseWriter, r *http.Request) error {
	resp, err := s.backend.ExecInspect(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, resp)
}

func (s *Server) execResize(w http.ResponseWriter, r *http.Request) error {
	h, wd, err := terminalSize(r)
	if err != nil {
		return err
	}
	if err := s.backend.ExecResize(r.Context(), r.PathValue("id"), h, wd); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}
