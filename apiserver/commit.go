package apiserver

import (
	"context"
	"io"
	"net/http"

	"github.com/moby/moby/api/types/common"
	containertypes "github.com/moby/moby/api/types/container"

	"github.com/hutch-engine/hutch/engine"
)

// CommitBackend turns containers into images and archives (docker commit,
// diff, export).
type CommitBackend interface {
	ContainerCommit(ctx context.Context, req engine.CommitRequest) (string, error)
	ContainerChanges(ctx context.Context, ref string) ([]containertypes.FilesystemChange, error)
	// ContainerExport returns a tar of the container's filesystem; closing
	// it releases the filesystem.
	ContainerExport(ctx context.Context, ref string) (io.ReadCloser, error)
}

// commit is POST /commit. The body, when there is one, is a container
// config replacing the container's as the base of the image's.
func (s *Server) commit(w http.ResponseWriter, r *http.Request) error {
	var cfg *containertypes.Config
	if err := decodeJSON(w, r, &cfg); err != nil {
		return err
	}
	q := r.URL.Query()
	pause := queryBoolDefault(r, "pause", true)
	id, err := s.backend.ContainerCommit(r.Context(), engine.CommitRequest{
		Container: q.Get("container"),
		Repo:      q.Get("repo"),
		Tag:       q.Get("tag"),
		Comment:   q.Get("comment"),
		Author:    q.Get("author"),
		Pause:     pause,
		Changes:   q["changes"],
		Config:    cfg,
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, common.IDResponse{ID: id})
}

// containerChanges is GET /containers/{id}/changes (docker diff).
func (s *Server) containerChanges(w http.ResponseWriter, r *http.Request) error {
	changes, err := s.backend.ContainerChanges(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if changes == nil {
		changes = []containertypes.FilesystemChange{}
	}
	return writeJSON(w, http.StatusOK, changes)
}

// containerExport is GET /containers/{id}/export (docker export). A
// failure after the first byte drops the connection: a truncated tar must
// not look complete.
func (s *Server) containerExport(w http.ResponseWriter, r *http.Request) error {
	rc, err := s.backend.ContainerExport(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	defer rc.Close()
	tw := &lazyWriter{w: w, contentType: "application/x-tar"}
	if _, err := io.Copy(tw, rc); err != nil {
		if !tw.started {
			return err
		}
		s.log.ErrorContext(r.Context(), "docker export failed mid-stream", "container", r.PathValue("id"), "err", err)
		panic(http.ErrAbortHandler)
	}
	if !tw.started {
		// An empty rootfs still gets a valid, empty answer.
		w.Header().Set("Content-Type", "application/x-tar")
		w.WriteHeader(http.StatusOK)
	}
	return nil
}
