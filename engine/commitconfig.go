package engine

import (
	"maps"
	"slices"
	"strings"

	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	containertypes "github.com/moby/moby/api/types/container"

	"github.com/hutch-engine/hutch/engine/images"
	"github.com/hutch-engine/hutch/engine/spec"
)

// commitConfig builds the config of a committed image as Docker does: the
// request's config (the container's when there is none), the changes
// applied on top, then every field still empty filled from the
// container's config. Bad changes are errdefs.ErrInvalidArgument.
func commitConfig(body *containertypes.Config, changes []string, ctr *containertypes.Config) (dockerspec.DockerOCIImageConfig, error) {
	if ctr == nil {
		ctr = &containertypes.Config{}
	}
	user := body
	if user == nil {
		user = ctr
	}
	cfg := imageConfigOf(user)
	if err := images.ApplyChanges(&cfg, changes); err != nil {
		return dockerspec.DockerOCIImageConfig{}, err
	}
	mergeCommit(&cfg, imageConfigOf(ctr))
	return cfg, nil
}

// imageConfigOf copies the fields of a container config an image config
// has. Nil and empty stay apart: an empty Entrypoint is an explicit "none".
func imageConfigOf(c *containertypes.Config) dockerspec.DockerOCIImageConfig {
	var out dockerspec.DockerOCIImageConfig
	out.User = c.User
	out.Env = slices.Clone(c.Env)
	out.Entrypoint = slices.Clone(c.Entrypoint)
	out.Cmd = slices.Clone(c.Cmd)
	out.Volumes = maps.Clone(c.Volumes)
	out.WorkingDir = c.WorkingDir
	out.Labels = maps.Clone(c.Labels)
	out.StopSignal = c.StopSignal
	out.OnBuild = slices.Clone(c.OnBuild)
	out.Shell = slices.Clone(c.Shell)
	if c.Healthcheck != nil {
		hc := *c.Healthcheck
		hc.Test = slices.Clone(hc.Test)
		out.Healthcheck = &hc
	}
	if len(c.ExposedPorts) > 0 {
		out.ExposedPorts = make(map[string]struct{}, len(c.ExposedPorts))
		for p := range c.ExposedPorts {
			out.ExposedPorts[p.String()] = struct{}{}
		}
	}
	return out
}

// mergeCommit fills what cfg leaves empty from ctr, field by field as
// Docker's commit merges the request's config with the container's.
func mergeCommit(cfg *dockerspec.DockerOCIImageConfig, ctr dockerspec.DockerOCIImageConfig) {
	if cfg.User == "" {
		cfg.User = ctr.User
	}
	if len(cfg.ExposedPorts) == 0 {
		cfg.ExposedPorts = ctr.ExposedPorts
	} else {
		for p := range ctr.ExposedPorts {
			cfg.ExposedPorts[p] = struct{}{}
		}
	}
	if len(cfg.Env) == 0 {
		cfg.Env = ctr.Env
	} else {
		set := map[string]bool{}
		for _, e := range cfg.Env {
			k, _, _ := strings.Cut(e, "=")
			set[k] = true
		}
		for _, e := range ctr.Env {
			if k, _, _ := strings.Cut(e, "="); !set[k] {
				cfg.Env = append(cfg.Env, e)
			}
		}
	}
	if cfg.Labels == nil {
		cfg.Labels = map[string]string{}
	}
	for k, v := range ctr.Labels {
		if _, ok := cfg.Labels[k]; !ok {
			cfg.Labels[k] = v
		}
	}
	if len(cfg.Entrypoint) == 0 {
		if len(cfg.Cmd) == 0 {
			cfg.Cmd = ctr.Cmd
		}
		if cfg.Entrypoint == nil {
			cfg.Entrypoint = ctr.Entrypoint
		}
	}
	cfg.Healthcheck = spec.MergeHealthcheck(cfg.Healthcheck, ctr.Healthcheck)
	if cfg.WorkingDir == "" {
		cfg.WorkingDir = ctr.WorkingDir
	}
	if len(cfg.Volumes) == 0 {
		cfg.Volumes = ctr.Volumes
	} else {
		for v := range ctr.Volumes {
			cfg.Volumes[v] = struct{}{}
		}
	}
	if cfg.StopSignal == "" {
		cfg.StopSignal = ctr.StopSignal
	}
	if len(cfg.OnBuild) == 0 {
		cfg.OnBuild = ctr.OnBuild
	}
	if len(cfg.Shell) == 0 {
		cfg.Shell = ctr.Shell
	}
}
