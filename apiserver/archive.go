package apiserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"

	"github.com/hutch-engine/hutch/engine"
)

// ArchiveBackend copies files in and out of containers (docker cp).
type ArchiveBackend interface {
	ContainerStatPath(ctx context.Context, ref, path string) (containertypes.PathStat, error)
	// ContainerArchivePath returns a tar of path; closing it releases the
	// container's filesystem.
	ContainerArchivePath(ctx context.Context, ref, path string) (io.ReadCloser, containertypes.PathStat, error)
	ContainerExtractToDir(ctx context.Context, ref string, req engine.ExtractRequest, content io.Reader) error
}

// archivePath reads the path parameter, which Docker requires.
func archivePath(r *http.Request) (string, error) {
	p := r.URL.Query().Get("path")
	if p == "" {
		return "", errdefs.ErrInvalidArgument.WithMessage("bad parameter: path cannot be empty")
	}
	return p, nil
}

// setPathStat puts the stat in Docker's header: base64 of its JSON.
func setPathStat(h http.Header, st containertypes.PathStat) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	h.Set("X-Docker-Container-Path-Stat", base64.StdEncoding.EncodeToString(b))
	return nil
}

func (s *Server) archiveHead(w http.ResponseWriter, r *http.Request) error {
	p, err := archivePath(r)
	if err != nil {
		return err
	}
	st, err := s.backend.ContainerStatPath(r.Context(), r.PathValue("id"), p)
	if err != nil {
		return err
	}
	if err := setPathStat(w.Header(), st); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) archiveGet(w http.ResponseWriter, r *http.Request) error {
	p, err := archivePath(r)
	if err != nil {
		return err
	}
	rc, st, err := s.backend.ContainerArchivePath(r.Context(), r.PathValue("id"), p)
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := setPathStat(w.Header(), st); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/x-tar")
	w.WriteHeader(http.StatusOK)
	_, err = io.Copy(w, rc)
	return err
}

func (s *Server) archivePut(w http.ResponseWriter, r *http.Request) error {
	p, err := archivePath(r)
	if err != nil {
		return err
	}
	req := engine.ExtractRequest{
		Path:                 p,
		NoOverwriteDirNonDir: queryBool(r, "noOverwriteDirNonDir"),
		CopyUIDGID:           queryBool(r, "copyUIDGID"),
	}
	if err := s.backend.ContainerExtractToDir(r.Context(), r.PathValue("id"), req, r.Body); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}
