package apiserver

import (
	"bufio"
	"errors"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
)

const apiModule = "github.com/moby/moby/api"

// TestMaxAPIVersionMatchesModule keeps MaxAPIVersion in step with the API
// module whose types we send: upgrading the module must raise it too.
func TestMaxAPIVersionMatchesModule(t *testing.T) {
	modVersion := apiModuleVersion(t)
	fields := strings.SplitN(strings.TrimPrefix(modVersion, "v"), ".", 3)
	if len(fields) < 2 {
		t.Fatalf("cannot read major.minor from %s %s", apiModule, modVersion)
	}
	if got := fields[0] + "." + fields[1]; got != MaxAPIVersion {
		t.Errorf("%s is %s, so MaxAPIVersion should be %q, not %q", apiModule, modVersion, got, MaxAPIVersion)
	}
}

// apiModuleVersion finds the API module's version in the test binary's build
// info, or else in ../go.mod.
func apiModuleVersion(t *testing.T) string {
	t.Helper()
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == apiModule {
				if d.Replace != nil && d.Replace.Version != "" {
					return d.Replace.Version
				}
				return d.Version
			}
		}
	}
	f, err := os.Open("../go.mod")
	if err != nil {
		t.Fatalf("%s not in build info and go.mod unreadable: %v", apiModule, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "require "))
		if len(fields) >= 2 && fields[0] == apiModule {
			return fields[1]
		}
	}
	t.Fatalf("%s not found in build info nor in ../go.mod", apiModule)
	return ""
}

func TestCheckVersion(t *testing.T) {
	tests := []struct {
		v       string
		wantErr string // "" when accepted
	}{
		{"1.24", ""},
		{"1.41", ""},
		{"1.56", ""},
		{"1.56.0", ""},
		{"01.041", ""},
		{"1.24.0.0", ""},
		{"1.23", "client version 1.23 is too old. Minimum supported API version is 1.24, please upgrade your client to a newer version"},
		{"1.23.99", "client version 1.23.99 is too old"},
		{"1", "client version 1 is too old"},
		{".", "client version . is too old"},
		{"1..30", "client version 1..30 is too old"},
		{"1.56.1", "client version 1.56.1 is too new. Maximum supported API version is 1.56"},
		{"1.57", "client version 1.57 is too new"},
		{"2.0", "client version 2.0 is too new"},
		{"1.99999999999999999999", "is too new"},
	}
	for _, tc := range tests {
		t.Run(tc.v, func(t *testing.T) {
			err := checkVersion(tc.v)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("checkVersion(%q) = %v, want nil", tc.v, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("checkVersion(%q) = %v, want %q", tc.v, err, tc.wantErr)
			}
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Errorf("checkVersion(%q) error is not InvalidArgument", tc.v)
			}
		})
	}
}

func TestVersionLess(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"1.41", "1.44", true},
		{"1.44", "1.44", false},
		{"1.44.0", "1.44", false},
		{"1.9", "1.10", true},
		{"1.56", "1.44", false},
	}
	for _, tc := range tests {
		if got := versionLess(tc.a, tc.b); got != tc.want {
			t.Errorf("versionLess(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestSplitVersion(t *testing.T) {
	tests := []struct {
		path, version, rest string
		ok                  bool
	}{
		{"/v1.41/info", "1.41", "/info", true},
		{"/v1.41/", "1.41", "/", true},
		{"/v1.41/containers/x/json", "1.41", "/containers/x/json", true},
		{"/v./info", ".", "/info", true},
		{"/info", "", "/info", false},
		{"/v1.41", "", "/v1.41", false},
		{"/v/info", "", "/v/info", false},
		{"/vabc/info", "", "/vabc/info", false},
		{"/v1.4a/info", "", "/v1.4a/info", false},
		{"/volumes/x", "", "/volumes/x", false},
		{"", "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			v, rest, ok := splitVersion(tc.path)
			if v != tc.version || rest != tc.rest || ok != tc.ok {
				t.Errorf("splitVersion(%q) = %q, %q, %v; want %q, %q, %v", tc.path, v, rest, ok, tc.version, tc.rest, tc.ok)
			}
		})
	}
}

// FuzzVersionPath checks that the version-prefix parser never panics, only
// splits off a real prefix, and that every version it lets through is within
// the served range when read independently as major.minor.
func FuzzVersionPath(f *testing.F) {
	for _, s := range []string{"/v1.41/info", "/v1.23/version", "/v1.99/info", "/vabc/info", "/v/x", "/v./x",
		"/v1.56.1/x", "/v01.041/x", "/v1.99999999999999999999/x", "/_ping", "", "/", "//", "/v1..2/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		v, rest, ok := splitVersion(path)
		if !ok {
			if rest != path {
				t.Fatalf("rejected %q but changed it to %q", path, rest)
			}
			return
		}
		if "/v"+v+rest != path || !strings.HasPrefix(rest, "/") || v == "" {
			t.Fatalf("splitVersion(%q) = %q, %q", path, v, rest)
		}
		if strings.Trim(v, "0123456789.") != "" {
			t.Fatalf("version %q from %q has other characters than digits and dots", v, path)
		}
		if checkVersion(v) != nil {
			return
		}
		fields := strings.Split(v, ".")
		got := majorMinor(fields)
		lo, hi := majorMinor(strings.Split(MinAPIVersion, ".")), majorMinor(strings.Split(MaxAPIVersion, "."))
		if got.less(lo) || hi.less(got) {
			t.Fatalf("accepted version %q (%v) outside [%s, %s]", v, got, MinAPIVersion, MaxAPIVersion)
		}
		if got == hi {
			for _, f := range fields[min(2, len(fields)):] {
				if n, _ := strconv.Atoi(f); n != 0 {
					t.Fatalf("accepted version %q above %s", v, MaxAPIVersion)
				}
			}
		}
	})
}

type mm struct{ major, minor int }

func (a mm) less(b mm) bool { return a.major < b.major || a.major == b.major && a.minor < b.minor }

// majorMinor reads the first two fields as Docker does (empty is 0, overflow
// clamps).
func majorMinor(fields []string) mm {
	var r mm
	r.major, _ = strconv.Atoi(fields[0])
	if len(fields) > 1 {
		r.minor, _ = strconv.Atoi(fields[1])
	}
	return r
}
