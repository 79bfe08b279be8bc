package spec

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/containerd/errdefs"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
)

// DefaultPath is the PATH a container gets when neither the image nor the
// request sets one (Docker's default).
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// MergeConfig returns the container's config as Docker stores it at create
// time: the request completed with the image's defaults (User, Env per key,
// Cmd and Entrypoint, WorkingDir, Labels, ExposedPorts, Volumes, StopSignal,
// Healthcheck). req is not modified; img may be nil (no image defaults).
//
// The rules are Docker's: a request Entrypoint replaces the image's and
// drops the image's Cmd; a request Cmd replaces the image's; an Entrypoint
// of [""] (docker run --entrypoint "") clears both. A config that has no
// command left, or a relative WorkingDir in the request, is
// errdefs.ErrInvalidArgument.
//
// MergeConfig is not idempotent (an Entrypoint cleared with [""] would take
// the image's on a second merge): merge once, at create, and store the
// result.
func MergeConfig(req *container.Config, img *dockerspec.DockerOCIImageConfig) (*container.Config, error) {
	if req == nil {
		return nil, fmt.Errorf("no container config: %w", errdefs.ErrInvalidArgument)
	}
	c := *req
	if wd := c.WorkingDir; wd != "" {
		if !path.IsAbs(wd) {
			return nil, fmt.Errorf("the working directory '%s' is invalid, it needs to be an absolute path: %w", wd, errdefs.ErrInvalidArgument)
		}
		c.WorkingDir = path.Clean(wd)
	}
	if img != nil {
		mergeImage(&c, img)
	}
	if len(c.Entrypoint) == 1 && c.Entrypoint[0] == "" {
		c.Entrypoint = nil
	}
	if len(c.Entrypoint) == 0 && len(c.Cmd) == 0 {
		return nil, fmt.Errorf("no command specified: %w", errdefs.ErrInvalidArgument)
	}
	return &c, nil
}

// ImageConfig is an image's config as a container's: what MergeConfig
// takes from the image, and the fields only images pass on (ONBUILD,
// SHELL). The builder starts each stage from it.
func ImageConfig(img *dockerspec.DockerOCIImageConfig) container.Config {
	var c container.Config
	if img == nil {
		return c
	}
	mergeImage(&c, img)
	c.OnBuild = slices.Clone(img.OnBuild)
	c.Shell = slices.Clone(img.Shell)
	return c
}

func mergeImage(c *container.Config, img *dockerspec.DockerOCIImageConfig) {
	if c.User == "" {
		c.User = img.User
	}
	c.Env = mergeImageEnv(c.Env, img.Env)
	if len(c.Entrypoint) == 0 {
		if len(c.Cmd) == 0 {
			c.Cmd = slices.Clone(img.Cmd)
		}
		// An empty but non-nil Entrypoint ([] in JSON) is an explicit "none".
		if c.Entrypoint == nil {
			c.Entrypoint = slices.Clone(img.Entrypoint)
		}
	}
	if c.WorkingDir == "" && img.WorkingDir != "" {
		// Image configs are not checked at pull; a relative WORKDIR can
		// only mean one thing in a container whose cwd starts at "/".
		c.WorkingDir = path.Clean("/" + img.WorkingDir)
	}
	if c.StopSignal == "" {
		c.StopSignal = img.StopSignal
	}
	// Always a fresh map, as Docker (inspect shows "Labels": {}).
	labels := maps.Clone(img.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, c.Labels)
	c.Labels = labels
	if len(img.Volumes) > 0 {
		vols := maps.Clone(img.Volumes)
		maps.Copy(vols, c.Volumes)
		c.Volumes = vols
	}
	if len(img.ExposedPorts) > 0 {
		ports := network.PortSet{}
		for p := range img.ExposedPorts {
			if port, err := network.ParsePort(p); err == nil {
				ports[port] = struct{}{}
			}
		}
		maps.Copy(ports, c.ExposedPorts)
		c.ExposedPorts = ports
	}
	c.Healthcheck = MergeHealthcheck(c.Healthcheck, img.Healthcheck)
}

// mergeImageEnv keeps the request's variables and appends the image's whose
// names the request does not set, as Docker does.
func mergeImageEnv(req, img []string) []string {
	if len(req) == 0 {
		return slices.Clone(img)
	}
	out := slices.Clone(req)
	set := make(map[string]bool, len(req))
	for _, e := range req {
		k, _, _ := strings.Cut(e, "=")
		set[k] = true
	}
	for _, e := range img {
		if k, _, _ := strings.Cut(e, "="); !set[k] {
			out = append(out, e)
		}
	}
	return out
}

// MergeHealthcheck fills the zero fields of req from img, Docker's way,
// without changing either.
func MergeHealthcheck(req, img *container.HealthConfig) *container.HealthConfig {
	if img == nil {
		return req
	}
	if req == nil {
		h := *img
		h.Test = slices.Clone(img.Test)
		return &h
	}
	h := *req
	if len(h.Test) == 0 {
		h.Test = slices.Clone(img.Test)
	}
	if h.Interval == 0 {
		h.Interval = img.Interval
	}
	if h.Timeout == 0 {
		h.Timeout = img.Timeout
	}
	if h.StartPeriod == 0 {
		h.StartPeriod = img.StartPeriod
	}
	if h.StartInterval == 0 {
		h.StartInterval = img.StartInterval
	}
	if h.Retries == 0 {
		h.Retries = img.Retries
	}
	return &h
}

// Command splits a merged config's command line into what Docker shows as
// the container's Path and Args.
func Command(c *container.Config) (path string, args []string) {
	argv := commandLine(c)
	if len(argv) == 0 {
		return "", nil
	}
	return argv[0], argv[1:]
}

func commandLine(c *container.Config) []string {
	argv := make([]string, 0, len(c.Entrypoint)+len(c.Cmd))
	argv = append(argv, c.Entrypoint...)
	return append(argv, c.Cmd...)
}

// processEnv is the environment of the container's process: Docker's
// defaults (PATH, HOSTNAME, TERM with a tty) and the links' variables,
// replaced or extended by the config's variables; a variable given without
// "=" removes that name.
func processEnv(c *container.Config, hostname string, linkEnv []string) []string {
	env := []string{"PATH=" + DefaultPath, "HOSTNAME=" + hostname}
	if c.Tty {
		env = append(env, "TERM=xterm")
	}
	return OverrideEnv(append(env, linkEnv...), c.Env)
}

// OverrideEnv applies overrides to env, Docker's way: KEY=value replaces
// KEY or is appended, a bare KEY removes it. env is not changed.
func OverrideEnv(env, overrides []string) []string {
	out := append([]string{}, env...)
	index := make(map[string]int, len(out))
	for i, kv := range out {
		k, _, _ := strings.Cut(kv, "=")
		index[k] = i
	}
	removed := map[int]bool{}
	for _, kv := range overrides {
		k, _, hasValue := strings.Cut(kv, "=")
		i, exists := index[k]
		switch {
		case !hasValue:
			if exists {
				removed[i] = true
			}
		case exists:
			out[i] = kv
			delete(removed, i)
		default:
			index[k] = len(out)
			out = append(out, kv)
		}
	}
	kept := out[:0]
	for i, kv := range out {
		if !removed[i] {
			kept = append(kept, kv)
		}
	}
	return kept
}

// workingDir is the process's cwd: the merged config's WorkingDir, or "/".
func workingDir(c *container.Config) (string, error) {
	wd := c.WorkingDir
	if wd == "" {
		return "/", nil
	}
	if !path.IsAbs(wd) {
		return "", fmt.Errorf("the working directory '%s' is invalid, it needs to be an absolute path: %w", wd, errdefs.ErrInvalidArgument)
	}
	return path.Clean(wd), nil
}
