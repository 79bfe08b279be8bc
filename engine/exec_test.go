package engine

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"

	"github.com/hutch-engine/hutch/engine/spec"
)

func TestExecEnv(t *testing.T) {
	cfg := &containertypes.Config{Hostname: "abc", Env: []string{"PATH=/img/bin", "FOO=1", "BAR=2"}}
	tests := []struct {
		name    string
		initEnv []string
		req     containertypes.ExecCreateRequest
		want    []string
	}{
		{name: "container env", want: []string{"PATH=/img/bin", "HOSTNAME=abc", "FOO=1", "BAR=2"}},
		{name: "tty adds TERM", req: containertypes.ExecCreateRequest{Tty: true},
			want: []string{"PATH=/img/bin", "HOSTNAME=abc", "TERM=xterm", "FOO=1", "BAR=2"}},
		{name: "exec env replaces, appends and removes", req: containertypes.ExecCreateRequest{Env: []string{"FOO=x", "NEW=y", "BAR", "NEW=z"}},
			want: []string{"PATH=/img/bin", "HOSTNAME=abc", "FOO=x", "NEW=z"}},
		{name: "the running container's hostname", initEnv: []string{"HOSTNAME=hosty"},
			want: []string{"PATH=/img/bin", "HOSTNAME=hosty", "FOO=1", "BAR=2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := execEnv(cfg, tc.initEnv, tc.req); !slices.Equal(got, tc.want) {
				t.Errorf("= %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseDetachKeys(t *testing.T) {
	tests := []struct {
		in   string
		want []byte
		bad  bool
	}{
		{in: "", want: nil},
		{in: "ctrl-p,ctrl-q", want: []byte{16, 17}},
		{in: "a,ctrl-x,DEL", want: []byte{'a', 24, 127}},
		{in: "ctrl-@,ctrl-[,ctrl-\\,ctrl-],ctrl-^,ctrl-_", want: []byte{0, 27, 28, 29, 30, 31}},
		{in: "ctrl-", bad: true},
		{in: "ctrl-1", bad: true},
		{in: "alt-x", bad: true},
		{in: "ab", bad: true},
		// Docker's names are lower case.
		{in: "ctrl-A,a", bad: true},
		{in: "del", bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseDetachKeys(tc.in, "detach")
			if tc.bad {
				if !errdefs.IsInvalidArgument(err) || err.Error() != "Invalid detach keys ("+tc.in+") provided" {
					t.Errorf("err = %v, want invalid argument", err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, tc.want) {
				t.Errorf("= %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestEscapeReader(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		keys     []byte
		out      string
		detached bool
	}{
		{name: "plain", in: "hello", out: "hello"},
		{name: "default keys", in: "ab\x10\x11cd", out: "ab", detached: true},
		{name: "partial match is input", in: "a\x10b\x10", out: "a\x10b\x10"},
		{name: "repeated first key", in: "\x10\x10\x11", out: "\x10", detached: true},
		{name: "custom single key", in: "xyz", keys: []byte("y"), out: "x", detached: true},
		{name: "custom keys", in: "aXbXYc", keys: []byte("XY"), out: "aXb", detached: true},
	}
	for _, tc := range tests {
		for _, oneByte := range []bool{false, true} {
			t.Run(tc.name, func(t *testing.T) {
				var src io.Reader = strings.NewReader(tc.in)
				if oneByte {
					src = iotest.OneByteReader(src)
				}
				detached := false
				r := newEscapeReader(src, tc.keys, func() { detached = true })
				got, err := io.ReadAll(r)
				if string(got) != tc.out || detached != tc.detached {
					t.Errorf("read %q detached %v, want %q %v", got, detached, tc.out, tc.detached)
				}
				if tc.detached != errors.Is(err, errDetached) {
					t.Errorf("err = %v", err)
				}
			})
		}
	}
}

func TestReplaceOrAppendEnvKeepsInput(t *testing.T) {
	in := []string{"A=1", "B=2"}
	out := spec.OverrideEnv(in, []string{"A"})
	if !slices.Equal(in, []string{"A=1", "B=2"}) || !slices.Equal(out, []string{"B=2"}) {
		t.Errorf("in %q out %q", in, out)
	}
}
