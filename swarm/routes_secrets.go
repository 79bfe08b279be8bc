package swarm

import (
	"context"
	"fmt"
	"net/http"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/swarm"
	"github.com/moby/swarmkit/v2/api"

	"github.com/hutch-engine/hutch/swarm/convert"
)

// Secrets and configs: SwarmKit stores them in its Raft log (encrypted
// at rest) and checks their names and sizes; hutch-swarm converts.

func (s *server) secretList(w http.ResponseWriter, r *http.Request) error {
	f, err := convert.ParseFilters(r.URL.Query().Get("filters"), "names", "name", "id", "label")
	if err != nil {
		return err
	}
	ctl, err := s.c.manager()
	if err != nil {
		return err
	}
	resp, err := ctl.ListSecrets(r.Context(), &api.ListSecretsRequest{Filters: &api.ListSecretsRequest_Filters{
		Names: f["names"], NamePrefixes: f["name"], IDPrefixes: f["id"], Labels: f.Labels("label"),
	}})
	if err != nil {
		return err
	}
	out := []swarm.Secret{}
	for _, sec := range resp.Secrets {
		out = append(out, convert.SecretFromGRPC(sec))
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *server) secretCreate(w http.ResponseWriter, r *http.Request) error {
	var spec swarm.SecretSpec
	if err := decode(r, &spec); err != nil {
		return err
	}
	gs, err := convert.SecretSpecToGRPC(spec)
	if err != nil {
		return err
	}
	ctl, err := s.c.manager()
	if err != nil {
		return err
	}
	resp, err := ctl.CreateSecret(r.Context(), &api.CreateSecretRequest{Spec: &gs})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, swarm.SecretCreateResponse{ID: resp.Secret.ID})
}

func resolveSecret(ctx context.Context, ctl api.ControlClient, ref string) (*api.Secret, error) {
	if s, err := ctl.GetSecret(ctx, &api.GetSecretRequest{SecretID: ref}); err == nil {
		return s.Secret, nil
	}
	r, err := ctl.ListSecrets(ctx, &api.ListSecretsRequest{Filters: &api.ListSecretsRequest_Filters{Names: []string{ref}}})
	if err != nil {
		return nil, err
	}
	if len(r.Secrets) == 0 {
		if r, err = ctl.ListSecrets(ctx, &api.ListSecretsRequest{Filters: &api.ListSecretsRequest_Filters{IDPrefixes: []string{ref}}}); err != nil {
			return nil, err
		}
	}
	switch len(r.Secrets) {
	case 0:
		return nil, errdefs.ErrNotFound.WithMessage(fmt.Sprintf("secret %s not found", ref))
	case 1:
		return r.Secrets[0], nil
	}
	return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("secret %s is ambiguous (%d matches found)", ref, len(r.Secrets)))
}

func (s *server) secretInspect(w http.ResponseWriter, r *http.Request) error {
	ctl, err := s.c.manager()
	if err != nil {
		return err
	}
	sec, err := resolveSecret(r.Context(), ctl, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, convert.SecretFromGRPC(sec))
}

func (s *server) secretRemove(w http.ResponseWriter, r *http.Request) error {
	ctl, err := s.c.manager()
	if err != nil {
		return err
	}
	sec, err := resolveSecret(r.Context(), ctl, r.PathValue("id"))
	if err != nil {
		return err
	}
	if _, err := ctl.RemoveSecret(r.Context(), &api.RemoveSecretRequest{SecretID: sec.ID}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// secretUpdate changes a secret's labels only, as SwarmKit allows.
func (s *server) secretUpdate(w http.ResponseWriter, r *http.Request) error {
	v, err := version(r, "secret")
	if err != nil {
		return err
	}
	var spec swarm.SecretSpec
	if err := decode(r, &spec); err != nil {
		return err
	}
	gs, err := convert.SecretSpecToGRPC(spec)
	if err != nil {
		return err
	}
	ctl, err := s.c.manager()
	if err != nil {
		return err
	}
	sec, err := resolveSecret(r.Context(), ctl, r.PathValue("id"))
	if err != nil {
		return err
	}
	if _, err := ctl.UpdateSecret(r.Context(), &api.UpdateSecretRequest{SecretID: sec.ID, SecretVersion: &api.Version{Index: v}, Spec: &gs}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (s *server) configList(w http.ResponseWriter, r *http.Request) error {
	f, err := convert.ParseFilters(r.URL.Query().Get("filters"), "name", "id", "label")
	if err != nil {
		return err
	}
	ctl, err := s.c.manager()
	if err != nil {
		return err
	}
	resp, err := ctl.ListConfigs(r.Context(), &api.ListConfigsRequest{Filters: &api.ListConfigsRequest_Filters{
		NamePrefixes: f["name"], IDPrefixes: f["id"], Labels: f.Labels("label"),
	}})
	if err != nil {
		return err
	}
	out := []swarm.Config{}
	for _, c := range resp.Configs {
		out = append(out, convert.ConfigFromGRPC(c))
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *server) configCreate(w http.ResponseWriter, r *http.Request) error {
	var spec swarm.ConfigSpec
	if err := decode(r, &spec); err != nil {
		return err
	}
	gs := convert.ConfigSpecToGRPC(spec)
	ctl, err := s.c.manager()
	if err != nil {
		return err
	}
	resp, err := ctl.CreateConfig(r.Context(), &api.CreateConfigRequest{Spec: &gs})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, swarm.ConfigCreateResponse{ID: resp.Config.ID})
}

func resolveConfig(ctx context.Context, ctl api.ControlClient, ref string) (*api.Config, error) {
	if c, err := ctl.GetConfig(ctx, &api.GetConfigRequest{ConfigID: ref}); err == nil {
		return c.Config, nil
	}
	r, err := ctl.ListConfigs(ctx, &api.ListConfigsRequest{Filters: &api.ListConfigsRequest_Filters{Names: []string{ref}}})
	if err != nil {
		return nil, err
	}
	if len(r.Configs) == 0 {
		if r, err = ctl.ListConfigs(ctx, &api.ListConfigsRequest{Filters: &api.ListConfigsRequest_Filters{IDPrefixes: []string{ref}}}); err != nil {
			return nil, err
		}
	}
	switch len(r.Configs) {
	case 0:
		return nil, errdefs.ErrNotFound.WithMessage(fmt.Sprintf("config %s not found", ref))
	case 1:
		return r.Configs[0], nil
	}
	return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("config %s is ambiguous (%d matches found)", ref, len(r.Configs)))
}

func (s *server) configInspect(w http.ResponseWriter, r *http.Request) error {
	ctl, err := s.c.manager()
	if err != nil {
		return err
	}
	c, err := resolveConfig(r.Context(), ctl, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, convert.ConfigFromGRPC(c))
}

func (s *server) configRemove(w http.ResponseWriter, r *http.Request) error {
	ctl, err := s.c.manager()
	if err != nil {
		return err
	}
	c, err := resolveConfig(r.Context(), ctl, r.PathValue("id"))
	if err != nil {
		return err
	}
	if _, err := ctl.RemoveConfig(r.Context(), &api.RemoveConfigRequest{ConfigID: c.ID}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *server) configUpdate(w http.ResponseWriter, r *http.Request) error {
	v, err := version(r, "config")
	if err != nil {
		return err
	}
	var spec swarm.ConfigSpec
	if err := decode(r, &spec); err != nil {
		return err
	}
	gs := convert.ConfigSpecToGRPC(spec)
	ctl, err := s.c.manager()
	if err != nil {
		return err
	}
	c, err := resolveConfig(r.Context(), ctl, r.PathValue("id"))
	if err != nil {
		return err
	}
	if _, err := ctl.UpdateConfig(r.Context(), &api.UpdateConfigRequest{ConfigID: c.ID, ConfigVersion: &api.Version{Index: v}, Spec: &gs}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}
