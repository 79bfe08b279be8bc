package engine

import (
	"maps"
	"testing"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"

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
		{"json-file", map[string]string{"max-file": "2"}, jsonlog.Rotation{}, errdefs.IsInvalidArgument},
		{"json-file", map[string]string{"compress": "true", "max-size": "1k"}, jsonlog.Rotation{}, errdefs.IsInvalidArgument},
		{"json-file", map[string]string{"mode": "later"}, jsonlog.Rotation{}, errdefs.IsInvalidArgument},
		{"json-file", map[string]string{"max-buffer-size": "1m"}, jsonlog.Rotation{}, errdefs.IsInvalidArgument},
		{"json-file", map[string]string{"mode": "non-blocking", "max-buffer-size": "lots"}, jsonlog.Rotation{}, errdefs.IsInvalidArgument},
		{"local", map[string]string{"max-file": "1"}, jsonlog.Rotation{}, errdefs.IsInvalidArgument},
		{"local", map[string]string{"max-size": "x"}, jsonlog.Rotation{}, errdefs.IsInvalidArgument},
		{"local", map[string]string{"max-file": "-2"}, jsonlog.Rotation{}, errdefs.IsInvalidArgument},
		{"local", map[string]string{"compress": "sometimes"}, jsonlog.Rotation{}, errdefs.IsInvalidArgument},
		{"local", map[string]string{"max-size": "1k", "other": "1"}, jsonlog.Rotation{}, errdefs.IsInvalidArgument},
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
