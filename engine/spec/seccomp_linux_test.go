package spec

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// denyMkdir is a profile in Docker's format that allows everything but
// mkdir and mkdirat.
const denyMkdir = `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir","mkdirat"],"action":"SCMP_ACT_ERRNO"}]}`

// allows reports whether the filter has an unconditional rule allowing
// name (the default profile's way of opening a call).
func allows(p *specs.LinuxSeccomp, name string) bool {
	for _, c := range p.Syscalls {
		if c.Action == specs.ActAllow && len(c.Args) == 0 && slices.Contains(c.Names, name) {
			return true
		}
	}
	return false
}

func TestBuildSeccomp(t *testing.T) {
	tests := []struct {
		name       string
		opts       []string
		privileged bool
		capAdd     []string
		daemon     string
		want       string // "default", "none", "mkdir"
		mountOpen  bool   // the default profile with mount and unshare allowed
	}{
		{name: "default", want: "default"},
		{name: "builtin", opts: []string{"seccomp=builtin"}, want: "default"},
		{name: "unconfined", opts: []string{"seccomp=unconfined"}, want: "none"},
		{name: "unconfined colon", opts: []string{"seccomp:unconfined"}, want: "none"},
		{name: "custom", opts: []string{"seccomp=" + denyMkdir}, want: "mkdir"},
		{name: "empty profile", opts: []string{"seccomp={}"}, want: "none"},
		{name: "privileged", privileged: true, want: "none"},
		{name: "privileged with a profile", privileged: true, opts: []string{"seccomp=" + denyMkdir}, want: "mkdir"},
		{name: "cap-add SYS_ADMIN", capAdd: []string{"SYS_ADMIN"}, want: "default", mountOpen: true},
		{name: "cap-add ALL", capAdd: []string{"ALL"}, want: "default", mountOpen: true},
		{name: "daemon unconfined", daemon: SeccompUnconfined, want: "none"},
		{name: "daemon builtin", daemon: SeccompBuiltin, want: "default"},
		{name: "daemon custom", daemon: denyMkdir, want: "mkdir"},
		{name: "daemon custom, container builtin", daemon: denyMkdir, opts: []string{"seccomp=builtin"}, want: "default"},
		{name: "daemon unconfined, container custom", daemon: SeccompUnconfined, opts: []string{"seccomp=" + denyMkdir}, want: "mkdir"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput(t)
			in.HostConfig.SecurityOpt = tt.opts
			in.HostConfig.Privileged = tt.privileged
			in.HostConfig.CapAdd = tt.capAdd
			in.SeccompProfile = tt.daemon
			s, w, err := Build(in)
			if err != nil {
				t.Fatal(err)
			}
			if len(w) > 0 {
				t.Errorf("warnings %q", w)
			}
			p := s.Linux.Seccomp
			switch tt.want {
			case "none":
				if p != nil {
					t.Fatalf("seccomp = %+v, want none", p)
				}
			case "mkdir":
				if p == nil || p.DefaultAction != specs.ActAllow || len(p.Syscalls) != 1 || p.Syscalls[0].Action != specs.ActErrno {
					t.Fatalf("seccomp = %+v, want the mkdir profile", p)
				}
			case "default":
				if p == nil || p.DefaultAction != specs.ActErrno || p.DefaultErrnoRet == nil || *p.DefaultErrnoRet != 1 {
					t.Fatalf("seccomp = %+v, want Docker's default (EPERM by default)", p)
				}
				if !allows(p, "read") || !allows(p, "execve") {
					t.Error("the default profile does not allow read and execve")
				}
				if !slices.Contains(p.Architectures, specs.ArchX86_64) && !slices.Contains(p.Architectures, specs.ArchAARCH64) {
					t.Errorf("architectures %v", p.Architectures)
				}
				for _, call := range []string{"mount", "umount2", "unshare", "setns"} {
					if allows(p, call) != tt.mountOpen {
						t.Errorf("%s allowed: %v, want %v", call, allows(p, call), tt.mountOpen)
					}
				}
			}
		})
	}
}

// The default profile follows the capabilities the container ends with:
// --cap-drop takes away what the default set (or ALL) would open.
func TestBuildSeccompCaps(t *testing.T) {
	in := testInput(t)
	if p := build(t, in).Linux.Seccomp; allows(p, "acct") || allows(p, "reboot") {
		t.Error("acct or reboot allowed with Docker's default capabilities")
	}
	in.HostConfig.CapAdd = []string{"SYS_PACCT"}
	if p := build(t, in).Linux.Seccomp; !allows(p, "acct") || allows(p, "reboot") {
		t.Error("--cap-add SYS_PACCT: acct not allowed, or reboot allowed")
	}
	in.HostConfig.CapAdd = []string{"ALL"}
	in.HostConfig.CapDrop = []string{"SYS_ADMIN"}
	if p := build(t, in).Linux.Seccomp; allows(p, "mount") || !allows(p, "reboot") {
		t.Error("--cap-add ALL --cap-drop SYS_ADMIN: mount allowed, or reboot not")
	}
}

func TestBuildSeccompInvalid(t *testing.T) {
	tests := []struct {
		name, profile, msg string
	}{
		{"not JSON", "{nope", "Decoding seccomp profile failed"},
		{"bad action", `{"defaultAction":"SCMP_ACT_MAYBE"}`, `defaultAction "SCMP_ACT_MAYBE"`},
		{"bad rule action", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir"],"action":"DENY"}]}`, `action "DENY"`},
		{"no names", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"action":"SCMP_ACT_ERRNO"}]}`, "names no system call"},
		{"empty name", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":[""],"action":"SCMP_ACT_ERRNO"}]}`, "empty system call name"},
		{"name and names", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"name":"a","names":["b"],"action":"SCMP_ACT_ERRNO"}]}`, "both 'name' and 'names'"},
		{"bad arch", `{"defaultAction":"SCMP_ACT_ALLOW","architectures":["SCMP_ARCH_VAX"]}`, "SCMP_ARCH_VAX"},
		{"bad flag", `{"defaultAction":"SCMP_ACT_ALLOW","flags":["SECCOMP_FILTER_FLAG_NOPE"]}`, "SECCOMP_FILTER_FLAG_NOPE"},
		{"arg index", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["kill"],"action":"SCMP_ACT_ERRNO","args":[{"index":6,"value":1,"op":"SCMP_CMP_EQ"}]}]}`, "argument index 6"},
		{"bad op", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["kill"],"action":"SCMP_ACT_ERRNO","args":[{"index":0,"value":1,"op":"EQ"}]}]}`, `operator "EQ"`},
		{"notify", `{"defaultAction":"SCMP_ACT_ALLOW","listenerPath":"/run/x.sock"}`, "notification"},
		{"notify action", `{"defaultAction":"SCMP_ACT_NOTIFY"}`, "SCMP_ACT_NOTIFY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput(t)
			in.HostConfig.SecurityOpt = []string{"seccomp=" + tt.profile}
			_, _, err := Build(in)
			if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Build: %v, want invalid argument with %q", err, tt.msg)
			}
			err = CheckSeccomp(in.HostConfig)
			if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("CheckSeccomp: %v, want invalid argument with %q", err, tt.msg)
			}
		})
	}
}

func TestCheckSeccomp(t *testing.T) {
	for _, opts := range [][]string{
		nil,
		{"seccomp=unconfined"},
		{"seccomp=builtin"},
		{"seccomp=" + denyMkdir},
		{"no-new-privileges", "seccomp:" + denyMkdir},
	} {
		if err := CheckSeccomp(&container.HostConfig{SecurityOpt: opts}); err != nil {
			t.Errorf("%q: %v", opts, err)
		}
	}
	// The profile's conditions on capabilities read the container's.
	hc := &container.HostConfig{CapAdd: []string{"SYS_ADMIN"}, SecurityOpt: []string{
		`seccomp={"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mount"],"action":"SCMP_ACT_ERRNO","includes":{"caps":["CAP_SYS_ADMIN"]}}]}`,
	}}
	if err := CheckSeccomp(hc); err != nil {
		t.Error(err)
	}
}

// The engine checks the daemon's profile with no container at hand.
func TestLoadSeccompProfileNoSpec(t *testing.T) {
	p, err := LoadSeccompProfile(denyMkdir, nil)
	if err != nil || p == nil || len(p.Syscalls) != 1 {
		t.Errorf("LoadSeccompProfile: %+v %v", p, err)
	}
}

// Profiles come straight from API clients (--security-opt seccomp=).
func FuzzLoadSeccompProfile(f *testing.F) {
	for _, s := range []string{
		denyMkdir, "{}", "{nope", `{"defaultAction":"SCMP_ACT_MAYBE"}`,
		`{"defaultAction":"SCMP_ACT_ERRNO","defaultErrnoRet":1,"archMap":[{"architecture":"SCMP_ARCH_X86_64","subArchitectures":["SCMP_ARCH_X86"]}],"syscalls":[{"names":["read"],"action":"SCMP_ACT_ALLOW","includes":{"caps":["CAP_SYS_ADMIN"],"minKernel":"4.8"}}]}`,
		`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["kill"],"action":"SCMP_ACT_ERRNO","args":[{"index":7,"value":1,"op":"SCMP_CMP_EQ"}]}]}`,
		`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"name":"a","names":["b"],"action":"SCMP_ACT_ERRNO"}]}`,
	} {
		f.Add(s)
	}
	caps := &specs.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{Bounding: []string{"CAP_SYS_ADMIN"}}}}
	f.Fuzz(func(t *testing.T, body string) {
		p, err := LoadSeccompProfile(body, caps)
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("%q: unclassed error %v", body, err)
			}
			return
		}
		// What is accepted is what runc takes: checked again, it passes.
		if err := checkSeccomp(p); err != nil {
			t.Fatalf("%q: accepted, then %v", body, err)
		}
		if p != nil {
			for _, c := range p.Syscalls {
				for _, a := range c.Args {
					if a.Index >= maxSyscallArgs {
						t.Fatalf("%q: argument index %d", body, a.Index)
					}
				}
			}
		}
	})
}

// On a kernel without seccomp, Docker runs containers unconfined and
// refuses a custom profile.
func TestBuildNoSeccomp(t *testing.T) {
	in := testInput(t)
	in.NoSeccomp = true
	for _, opts := range [][]string{nil, {"seccomp=builtin"}, {"seccomp=unconfined"}} {
		in.HostConfig.SecurityOpt = opts
		if p := build(t, in).Linux.Seccomp; p != nil {
			t.Errorf("%q: seccomp %+v", opts, p)
		}
	}
	in.HostConfig.SecurityOpt = []string{"seccomp=" + denyMkdir}
	if _, _, err := Build(in); !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "seccomp is not enabled in your kernel") {
		t.Errorf("a custom profile: %v", err)
	}
}
