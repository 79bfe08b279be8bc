package spec

import (
	"errors"
	"slices"
	"testing"

	"github.com/containerd/errdefs"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func imageConfig(c ocispec.ImageConfig) *dockerspec.DockerOCIImageConfig {
	return &dockerspec.DockerOCIImageConfig{ImageConfig: c}
}

func TestMergeConfigCommand(t *testing.T) {
	img := imageConfig(ocispec.ImageConfig{Entrypoint: []string{"/entry"}, Cmd: []string{"img-cmd"}})
	noEntry := imageConfig(ocispec.ImageConfig{Cmd: []string{"sh"}})
	tests := []struct {
		name       string
		req        container.Config
		img        *dockerspec.DockerOCIImageConfig
		entrypoint []string
		cmd        []string
		err        error
	}{
		{name: "image defaults", img: img, entrypoint: []string{"/entry"}, cmd: []string{"img-cmd"}},
		{name: "request cmd replaces image cmd", req: container.Config{Cmd: []string{"ls", "-l"}}, img: img, entrypoint: []string{"/entry"}, cmd: []string{"ls", "-l"}},
		{name: "request entrypoint drops image cmd", req: container.Config{Entrypoint: []string{"/other"}}, img: img, entrypoint: []string{"/other"}},
		{name: "request entrypoint and cmd", req: container.Config{Entrypoint: []string{"/other"}, Cmd: []string{"x"}}, img: img, entrypoint: []string{"/other"}, cmd: []string{"x"}},
		{name: "empty entrypoint string clears both", req: container.Config{Entrypoint: []string{""}, Cmd: []string{"echo"}}, img: img, cmd: []string{"echo"}},
		{name: "empty entrypoint string and no cmd", req: container.Config{Entrypoint: []string{""}}, img: img, err: errdefs.ErrInvalidArgument},
		{name: "explicit empty entrypoint keeps image cmd only", req: container.Config{Entrypoint: []string{}}, img: img, entrypoint: []string{}, cmd: []string{"img-cmd"}},
		{name: "image without entrypoint", img: noEntry, cmd: []string{"sh"}},
		{name: "no image", req: container.Config{Cmd: []string{"true"}}, cmd: []string{"true"}},
		{name: "nothing to run", img: imageConfig(ocispec.ImageConfig{}), err: errdefs.ErrInvalidArgument},
		{name: "nothing to run without image", err: errdefs.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MergeConfig(&tt.req, tt.img)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Entrypoint, tt.entrypoint) || !slices.Equal(got.Cmd, tt.cmd) {
				t.Errorf("entrypoint %q cmd %q, want %q %q", got.Entrypoint, got.Cmd, tt.entrypoint, tt.cmd)
			}
		})
	}
}

func TestMergeConfigNoCommandMessage(t *testing.T) {
	_, err := MergeConfig(&container.Config{}, nil)
	if err == nil || err.Error() != "no command specified: invalid argument" {
		t.Fatalf("err = %v", err)
	}
}

func TestMergeConfigFields(t *testing.T) {
	img := &dockerspec.DockerOCIImageConfig{
		ImageConfig: ocispec.ImageConfig{
			User:         "nobody",
			Env:          []string{"PATH=/img/bin", "A=img", "B=img"},
			Cmd:          []string{"run"},
			WorkingDir:   "/srv",
			Labels:       map[string]string{"l1": "img", "l2": "img"},
			StopSignal:   "SIGQUIT",
			ExposedPorts: map[string]struct{}{"80/tcp": {}, "bogus/x": {}},
			Volumes:      map[string]struct{}{"/data": {}},
		},
		DockerOCIImageConfigExt: dockerspec.DockerOCIImageConfigExt{
			Healthcheck: &dockerspec.HealthcheckConfig{Test: []string{"CMD", "true"}, Retries: 3},
		},
	}
	req := &container.Config{
		Env:         []string{"A=req", "C=req"},
		Labels:      map[string]string{"l2": "req"},
		Healthcheck: &container.HealthConfig{Retries: 5},
	}
	got, err := MergeConfig(req, img)
	if err != nil {
		t.Fatal(err)
	}
	if got.User != "nobody" || got.WorkingDir != "/srv" || got.StopSignal != "SIGQUIT" {
		t.Errorf("user %q workdir %q stop signal %q", got.User, got.WorkingDir, got.StopSignal)
	}
	if want := []string{"A=req", "C=req", "PATH=/img/bin", "B=img"}; !slices.Equal(got.Env, want) {
		t.Errorf("env = %q, want %q", got.Env, want)
	}
	if got.Labels["l1"] != "img" || got.Labels["l2"] != "req" {
		t.Errorf("labels = %v", got.Labels)
	}
	if _, ok := got.ExposedPorts[network.MustParsePort("80/tcp")]; !ok || len(got.ExposedPorts) != 1 {
		t.Errorf("exposed ports = %v", got.ExposedPorts)
	}
	if _, ok := got.Volumes["/data"]; !ok {
		t.Errorf("volumes = %v", got.Volumes)
	}
	if h := got.Healthcheck; h == nil || h.Retries != 5 || !slices.Equal(h.Test, []string{"CMD", "true"}) {
		t.Errorf("healthcheck = %+v", got.Healthcheck)
	}
	if len(req.Env) != 2 || len(req.Labels) != 1 || req.User != "" {
		t.Errorf("request modified: %+v", req)
	}
}

func TestMergeConfigWorkingDir(t *testing.T) {
	tests := []struct {
		name, req, img, want string
		err                  bool
	}{
		{name: "none", want: ""},
		{name: "request", req: "/app/", want: "/app"},
		{name: "request cleaned", req: "/app/../srv", want: "/srv"},
		{name: "image", img: "/img", want: "/img"},
		{name: "request wins", req: "/req", img: "/img", want: "/req"},
		{name: "relative request", req: "app", err: true},
		{name: "relative image made absolute", img: "app", want: "/app"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MergeConfig(&container.Config{WorkingDir: tt.req, Cmd: []string{"x"}},
				imageConfig(ocispec.ImageConfig{WorkingDir: tt.img}))
			if tt.err {
				if !errors.Is(err, errdefs.ErrInvalidArgument) {
					t.Fatalf("err = %v, want invalid argument", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.WorkingDir != tt.want {
				t.Errorf("WorkingDir = %q, want %q", got.WorkingDir, tt.want)
			}
		})
	}
}

func TestCommand(t *testing.T) {
	p, args := Command(&container.Config{Entrypoint: []string{"/e", "-x"}, Cmd: []string{"a"}})
	if p != "/e" || !slices.Equal(args, []string{"-x", "a"}) {
		t.Errorf("Command = %q %q", p, args)
	}
	if p, args := Command(&container.Config{}); p != "" || args != nil {
		t.Errorf("empty Command = %q %q", p, args)
	}
}

func TestProcessEnv(t *testing.T) {
	tests := []struct {
		name string
		cfg  container.Config
		link []string
		want []string
	}{
		{name: "defaults", want: []string{"PATH=" + DefaultPath, "HOSTNAME=h"}},
		{name: "links before the config", cfg: container.Config{Tty: true, Env: []string{"DB_NAME=mine", "A=1"}}, link: []string{"DB_NAME=/web/db", "DB_PORT=tcp://10.0.0.2:80"},
			want: []string{"PATH=" + DefaultPath, "HOSTNAME=h", "TERM=xterm", "DB_NAME=mine", "DB_PORT=tcp://10.0.0.2:80", "A=1"}},
		{name: "tty", cfg: container.Config{Tty: true}, want: []string{"PATH=" + DefaultPath, "HOSTNAME=h", "TERM=xterm"}},
		{name: "path replaced in place", cfg: container.Config{Env: []string{"A=1", "PATH=/bin"}}, want: []string{"PATH=/bin", "HOSTNAME=h", "A=1"}},
		{name: "term overridable", cfg: container.Config{Tty: true, Env: []string{"TERM=vt100"}}, want: []string{"PATH=" + DefaultPath, "HOSTNAME=h", "TERM=vt100"}},
		{name: "name without value unsets", cfg: container.Config{Env: []string{"HOSTNAME", "X"}}, want: []string{"PATH=" + DefaultPath}},
		{name: "unset then set", cfg: container.Config{Env: []string{"HOSTNAME", "HOSTNAME=again"}}, want: []string{"PATH=" + DefaultPath, "HOSTNAME=again"}},
		{name: "later value wins", cfg: container.Config{Env: []string{"A=1", "A=2"}}, want: []string{"PATH=" + DefaultPath, "HOSTNAME=h", "A=2"}},
		{name: "empty value kept", cfg: container.Config{Env: []string{"A="}}, want: []string{"PATH=" + DefaultPath, "HOSTNAME=h", "A="}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := processEnv(&tt.cfg, "h", tt.link); !slices.Equal(got, tt.want) {
				t.Errorf("env = %q, want %q", got, tt.want)
			}
		})
	}
}
