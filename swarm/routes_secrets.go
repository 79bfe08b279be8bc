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
	return resolveRef("secret", ref,
		func(id string) (*api.Secret, error) {
			r, err := ctl.GetSecret(ctx, &api.GetSecretRequest{SecretID: id})
			if err != nil {
				return nil, err
			}
			return r.Secret, nil
		},
		func(f api.ListSecretsRequest_Filters) ([]*api.Secret, error) {
			r, err := ctl.ListSecrets(ctx, &api.ListSecretsRequest{Filters: &f})
			if err != nil {
				return nil, err
			}
			return r.Secrets, nil
		},
		func(names, prefixes []string) api.ListSecretsRequest_Filters {
			return api.ListSecretsRequest_Filters{Names: names, IDPrefixes: prefixes}
		})
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
	return resolveRef("config", ref,
		func(id string) (*api.Config, error) {
			r, err := ctl.GetConfig(ctx, &api.GetConfigRequest{ConfigID: id})
			if err != nil {
				return nil, err
			}
			return r.Config, nil
		},
		func(f api.ListConfigsRequest_Filters) ([]*api.Config, error) {
			r, err := ctl.ListConfigs(ctx, &api.ListConfigsRequest{Filters: &f})
			if err != nil {
				return nil, err
			}
			return r.Configs, nil
		},
		func(names, prefixes []string) api.ListConfigsRequest_Filters {
			return api.ListConfigsRequest_Filters{Names: names, IDPrefixes: prefixes}
		})
}

// resolveRef finds the secret or config (kind) that ref names, as Docker's
// cluster does: by ID, else by exact name, else by a unique ID prefix.
func resolveRef[T, F any](kind, ref string, get func(string) (T, error), list func(F) ([]T, error), filters func(names, prefixes []string) F) (T, error) {
	var zero T
	if v, err := get(ref); err == nil {
		return v, nil
	}
	found, err := list(filters([]string{ref}, nil))
	if err != nil {
		return zero, err
	}
	if len(found) == 0 {
		if found, err = list(filters(nil, []string{ref})); err != nil {
			return zero, err
		}
	}
	switch len(found) {
	case 0:
		return zero, errdefs.ErrNotFound.WithMessage(fmt.Sprintf("%s %s not found", kind, ref))
	case 1:
		return found[0], nil
	}
	return zero, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("%s %s is ambiguous (%d matches found)", kind, ref, len(found)))
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
