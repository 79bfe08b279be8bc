package engine

import (
	"maps"
	"testing"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/shim/jsonlog"
)

func TestLogRotationOptions(t *testing.T) {
	for _, c := range []struct {
		typ  string
		opts map[string]string
		want jsonlog.Rotation
		err  func(error) bool
	}{
		{"", nil, jsonlog.Rotation{}, nil},
		{"json-file", map[string]string{"max-size": "10m", "max-file": "3", "compress": "1"}, jsonlog.Rotation{MaxSize: 10_000_000, MaxFiles: 3, Compress: true}, nil},
		{"json-file", map[string]string{"max-size": "-1", "tag": "{{.Name}}", "mode": "non-blocking", "max-buffer-size": "1m"}, jsonlog.Rotation{}, nil},
		{"local", nil, jsonlog.Rotation{MaxSize: 20 << 20, MaxFiles: 5, Compress: true}, nil},
		{"local", map[string]string{"max-file": "1", "compress": "false", "max-size": "1k"}, jsonlog.Rotation{MaxSize: 1000, MaxFiles: 1}, nil},
		{"none", map[string]string{"anything": "goes"}, jsonlog.Rotation{}, nil},
		{"json-file", map[string]string{"max-file": "2"}, jsonlog.Rotation{}, nil},
		{"json-file", map[string]string{"max-file": "3", "compress": "true"}, jsonlog.Rotation{}, errdefs.IsInvalidArgument},
		{"json-file", map[string]string{"compress": "true", "max-size": "1k"}, jsonlog.Rotation{}, errdefs.IsInvalidArgument},
		{"json-file", map[string]string{"mode": "later"}, jsonlog.Rotation{}, errdefs.IsInvalidArgument},
		{"json-file", map[string]string{"max-buffer-size": "1m"}, jsonlog.Rotation{}, errdefs.IsInvalidArgument},
		{"json-file", map[string]string{"mode": "non-blocking", "max-buffer-size": "lots"}, jsonlog.Rotation{}, errdefs.IsInvalidArgument},
		{"local", map[string]string{"max-file": "1"}, jsonlog.Rotation{}, errdefs.IsInvalidArgument},
		{"local", map[string]string{"max-size": "x"}, jsonlog.Rotation{}, errdefs.IsInvalidArgument},
		{"local", map[string]string{"max-file": "-2"}, jsonlog.Rotation{}, errdefs.IsInvalidArgument},
		{"local", map[string]string{"compress": "sometimes"}, jsonlog.Rotation{}, errdefs.IsInvalidArgument},
		{"local", map[string]string{"max-size": "1k", "other": "1"}, jsonlog.Rotation{}, errdefs.IsInvalidArgument},
		{"json-file", map[string]string{"labels-regex": "^app\\.", "env-regex": "^GO", "labels": "a,b", "env": "X"}, jsonlog.Rotation{}, nil},
		{"json-file", map[string]string{"labels-regex": "("}, jsonlog.Rotation{}, errdefs.IsInvalidArgument},
		{"json-file", map[string]string{"env-regex": "[z-a]"}, jsonlog.Rotation{}, errdefs.IsInvalidArgument},
		{"nosuch", nil, jsonlog.Rotation{}, errdefs.IsInvalidArgument},
		{"gelf", nil, jsonlog.Rotation{}, errdefs.IsNotImplemented},
	} {
		got, err := logRotation(containertypes.LogConfig{Type: c.typ, Config: c.opts})
		switch {
		case c.err == nil && err != nil:
			t.Errorf("%s %v: %v", c.typ, c.opts, err)
		case c.err != nil && !c.err(err):
			t.Errorf("%s %v: error %v, want another kind", c.typ, c.opts, err)
		case got != c.want:
			t.Errorf("%s %v = %+v, want %+v", c.typ, c.opts, got, c.want)
		}
	}
}

// json-file's attributes, as Docker's ExtraAttributes picks them: labels
// and env by name (absent ones skipped) and by expression.
func TestLogAttrs(t *testing.T) {
	cfg := &containertypes.Config{
		Labels: map[string]string{"app.name": "web", "app.tier": "front", "team": "core", "other": "x"},
		Env:    []string{"GOPATH=/go", "GOFLAGS=-v", "HOME=/root", "EMPTY=", "NOVALUE"},
	}
	for _, c := range []struct {
		typ  string
		opts map[string]string
		want map[string]string
	}{
		{"json-file", nil, nil},
		{"json-file", map[string]string{"labels": "team,missing", "env": "HOME,EMPTY,NOVALUE"}, map[string]string{"team": "core", "HOME": "/root", "EMPTY": ""}},
		{"", map[string]string{"labels-regex": `^app\.`, "env-regex": "^GO"}, map[string]string{"app.name": "web", "app.tier": "front", "GOPATH": "/go", "GOFLAGS": "-v"}},
		{"local", map[string]string{"labels": "team"}, nil},
		{"json-file", map[string]string{"labels": "missing"}, nil},
	} {
		ctr := &container.Container{Config: cfg, HostConfig: &containertypes.HostConfig{LogConfig: containertypes.LogConfig{Type: c.typ, Config: c.opts}}}
		if got := logAttrs(ctr); !maps.Equal(got, c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("%s %v: %v, want %v", c.typ, c.opts, got, c.want)
		}
	}
}

// docker logs --details: attributes sorted, query-escaped, comma-joined.
func TestLogDetails(t *testing.T) {
	if got := string(logDetails(map[string]string{"b": "x y", "a": "1,2=3"})); got != "a=1%2C2%3D3,b=x+y" {
		t.Errorf("logDetails = %q", got)
	}
	if got := logDetails(nil); len(got) != 0 {
		t.Errorf("logDetails(nil) = %q", got)
	}
}

// docker logs --tail: a number, else all lines (Docker's daemon/logs.go
// reads a tail it cannot parse as -1, not as an error).
func TestTailLines(t *testing.T) {
	for v, want := range map[string]int{"": -1, "all": -1, "abc": -1, "1.5": -1, "0": 0, "3": 3, "-2": -2} {
		if got := tailLines(v); got != want {
			t.Errorf("tailLines(%q) = %d, want %d", v, got, want)
		}
	}
}

// A container naming no driver gets the daemon's, with its options under
// its own; one naming another driver keeps only its own options.
func TestMergeLogConfig(t *testing.T) {
	e := &Engine{opts: Options{LogConfig: containertypes.LogConfig{Type: "local", Config: map[string]string{"max-size": "1m", "max-file": "2"}}}}
	lc := containertypes.LogConfig{Config: map[string]string{"max-file": "4"}}
	if err := e.mergeLogConfig(&lc); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"max-size": "1m", "max-file": "4"}; lc.Type != "local" || !maps.Equal(lc.Config, want) {
		t.Errorf("merged %+v, want local %v", lc, want)
	}
	if e.opts.LogConfig.Config["max-file"] != "2" {
		t.Errorf("the daemon's options changed: %v", e.opts.LogConfig.Config)
	}
	lc = containertypes.LogConfig{Type: "json-file"}
	if err := e.mergeLogConfig(&lc); err != nil || len(lc.Config) != 0 || lc.Config == nil {
		t.Errorf("json-file under a local default: %+v %v", lc, err)
	}
	e = &Engine{}
	lc = containertypes.LogConfig{}
	if err := e.mergeLogConfig(&lc); err != nil || lc.Type != "json-file" {
		t.Errorf("no default: %+v %v", lc, err)
	}
	if err := checkDefaultLogConfig(containertypes.LogConfig{Type: "local", Config: map[string]string{"max-file": "x"}}); err == nil {
		t.Error("a bad default was taken")
	}
}
