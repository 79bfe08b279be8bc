package storage

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/registry"
	"go.podman.io/image/v5/types"
)

func TestIsInsecureRegistry(t *testing.T) {
	tests := []struct {
		host     string
		insecure []string
		want     bool
	}{
		{"localhost:5000", nil, true},
		{"localhost", nil, true},
		{"registry.localhost:5000", nil, true},
		{"127.0.0.1:5000", nil, true},
		{"127.3.2.1", nil, true},
		{"[::1]:5000", nil, true},
		{"docker.io", nil, false},
		{"192.168.1.10:5000", nil, false},
		{"myreg.example:5000", []string{"myreg.example:5000"}, true},
		{"myreg.example:5000", []string{"http://myreg.example:5000/"}, true},
		{"myreg.example:5001", []string{"myreg.example:5000"}, false},
		{"10.1.2.3:5000", []string{"10.0.0.0/8"}, true},
		{"192.168.1.10:5000", []string{"10.0.0.0/8"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			if got := isInsecureRegistry(context.Background(), tt.host, tt.insecure); got != tt.want {
				t.Errorf("isInsecureRegistry(%q, %v) = %v, want %v", tt.host, tt.insecure, got, tt.want)
			}
		})
	}
}

func TestParseMirrors(t *testing.T) {
	got, err := parseMirrors(context.Background(),
		[]string{"https://mirror.example", "http://cache.example:5000/", "127.0.0.1:5001", "https://corp.example:443"},
		[]string{"corp.example:443"})
	if err != nil {
		t.Fatal(err)
	}
	want := []mirror{{"mirror.example", false}, {"cache.example:5000", true}, {"127.0.0.1:5001", true}, {"corp.example:443", true}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mirror %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"ftp://x", "https://x/path", "https://", "https://u:p@x"} {
		t.Run(bad, func(t *testing.T) {
			if _, err := parseMirrors(context.Background(), []string{bad}, nil); !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Errorf("parseMirrors(%q) = %v, want invalid argument", bad, err)
			}
		})
	}
}

func TestParsePlatform(t *testing.T) {
	tests := []struct {
		in                string
		os, arch, variant string
		invalid           bool
	}{
		{"", "linux", runtime.GOARCH, "", false},
		{"linux", "linux", runtime.GOARCH, "", false},
		{"linux/amd64", "linux", "amd64", "", false},
		{"linux/x86_64", "linux", "amd64", "", false},
		{"linux/arm64/v8", "linux", "arm64", "v8", false},
		{"Linux/AARCH64", "linux", "arm64", "", false},
		{"linux/arm/v7/extra", "", "", "", true},
		{"/amd64", "", "", "", true},
		{"linux/", "", "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			osName, arch, variant, err := parsePlatform(tt.in)
			if tt.invalid {
				if !errors.Is(err, errdefs.ErrInvalidArgument) {
					t.Errorf("parsePlatform(%q) error = %v, want invalid argument", tt.in, err)
				}
				return
			}
			if err != nil || osName != tt.os || arch != tt.arch || variant != tt.variant {
				t.Errorf("parsePlatform(%q) = %q %q %q %v", tt.in, osName, arch, variant, err)
			}
		})
	}
}

func TestDockerAuth(t *testing.T) {
	tests := []struct {
		name string
		in   registry.AuthConfig
		want types.DockerAuthConfig
		bad  bool
	}{
		{"anonymous", registry.AuthConfig{}, types.DockerAuthConfig{}, false},
		{"password", registry.AuthConfig{Username: "u", Password: "p", ServerAddress: "r"}, types.DockerAuthConfig{Username: "u", Password: "p"}, false},
		{"identity token", registry.AuthConfig{IdentityToken: "tok"}, types.DockerAuthConfig{IdentityToken: "tok"}, false},
		{"auth field", registry.AuthConfig{Auth: "dTpwOng="}, types.DockerAuthConfig{Username: "u", Password: "p:x"}, false},
		{"bad auth field", registry.AuthConfig{Auth: "!!"}, types.DockerAuthConfig{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := dockerAuth(tt.in)
			if tt.bad {
				if !errors.Is(err, errdefs.ErrInvalidArgument) {
					t.Errorf("error = %v, want invalid argument", err)
				}
				return
			}
			if err != nil || got == nil || *got != tt.want {
				t.Errorf("dockerAuth = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestSystemContextIsHermetic(t *testing.T) {
	s := &Store{regDir: t.TempDir(), tmpDir: "/tmp/x", authEmpty: "/nonexistent/auth.json"}
	tests := []struct {
		ref      string
		opts     PullOptions
		insecure bool
		conf     []string
	}{
		{"busybox", PullOptions{}, false, nil},
		{"busybox", PullOptions{Mirrors: []string{"http://127.0.0.1:5001"}}, false,
			[]string{`prefix = "docker.io"`, `location = "127.0.0.1:5001"`, "insecure = true"}},
		{"127.0.0.1:5000/busybox", PullOptions{Mirrors: []string{"https://mirror.example"}}, true, nil},
		{"quay.io/x/y", PullOptions{InsecureRegistries: []string{"quay.io"}}, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			named, err := parsePullReference(tt.ref)
			if err != nil {
				t.Fatal(err)
			}
			sys, err := s.systemContext(context.Background(), reference.Domain(named), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if sys.DockerAuthConfig == nil || sys.AuthFilePath != s.authEmpty || sys.BlobInfoCacheDir != noBlobInfoCache ||
				!strings.HasPrefix(sys.SystemRegistriesConfPath, s.regDir) || !strings.HasPrefix(sys.SystemRegistriesConfDirPath, s.regDir) {
				t.Errorf("system context reads outside the store: %+v", sys)
			}
			if got := sys.DockerInsecureSkipTLSVerify == types.OptionalBoolTrue; got != tt.insecure {
				t.Errorf("insecure = %v, want %v", got, tt.insecure)
			}
			conf, err := os.ReadFile(sys.SystemRegistriesConfPath)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.conf {
				if !strings.Contains(string(conf), want) {
					t.Errorf("registries.conf lacks %q:\n%s", want, conf)
				}
			}
			if tt.conf == nil && strings.Contains(string(conf), "[[registry") {
				t.Errorf("registries.conf should be empty:\n%s", conf)
			}
		})
	}
}

func TestLoginHost(t *testing.T) {
	tests := map[string]string{
		"":                            "docker.io",
		"https://index.docker.io/v1/": "docker.io",
		"docker.io":                   "docker.io",
		"127.0.0.1:5000":              "127.0.0.1:5000",
		"http://localhost:5000/":      "localhost:5000",
		"https://quay.io":             "quay.io",
	}
	for in, want := range tests {
		if got, err := loginHost(in); err != nil || got != want {
			t.Errorf("loginHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := loginHost("https://"); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("loginHost(https://) = %v", err)
	}
}
