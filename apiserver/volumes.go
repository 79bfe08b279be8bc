package apiserver

import (
	"context"
	"net/http"

	"github.com/moby/moby/api/types/volume"
)

// VolumeBackend is the volume half of the engine.
type VolumeBackend interface {
	VolumeCreate(ctx context.Context, req volume.CreateRequest) (volume.Volume, error)
	VolumeInspect(ctx context.Context, name string) (volume.Volume, error)
	VolumeList(ctx context.Context, filters string) (volume.ListResponse, error)
	VolumeRemove(ctx context.Context, name string, force bool) error
	// VolumesPrune removes unused volumes; all takes named ones too
	// where the filters do not say (all=true).
	VolumesPrune(ctx context.Context, filters string, all bool) (volume.PruneReport, error)
}

func (s *Server) volumeCreate(w http.ResponseWriter, r *http.Request) error {
	var req volume.CreateRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	v, err := s.backend.VolumeCreate(r.Context(), req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, v)
}

func (s *Server) volumeList(w http.ResponseWriter, r *http.Request) error {
	list, err := s.backend.VolumeList(r.Context(), r.URL.Query().Get("filters"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, list)
}

func (s *Server) volumeInspect(w http.ResponseWriter, r *http.Request) error {
	v, err := s.backend.VolumeInspect(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, v)
}

func (s *Server) volumeRemove(w http.ResponseWriter, r *http.Request) error {
	if err := s.backend.VolumeRemove(r.Context(), r.PathValue("name"), queryBool(r, "force")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// volumePrune: before API 1.42, prune took every unused volume, named
// ones too; since, only anonymous ones unless the filter all=true.
func (s *Server) volumePrune(w http.ResponseWriter, r *http.Request) error {
	all := versionLess(APIVersion(r.Context()), "1.42")
	rep, err := s.backend.VolumesPrune(r.Context(), r.URL.Query().Get("filters"), all)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, rep)
}
