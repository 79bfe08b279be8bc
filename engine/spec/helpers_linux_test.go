package spec

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/opencontainers/runtime-spec/specs-go"
)

const testID = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

const testPasswd = `root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/bin/false
app:x:1000:1000:app:/home/app:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
`

const testGroup = `root:x:0:
daemon:x:1:
wheel:x:10:root,app
audio:x:29:app
app:x:1000:
staff:x:50:
nogroup:x:65534:
`

// writeFiles creates files (path → content) under dir; a content starting
// with "->" makes a symlink to the rest.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "->"); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// newRootfs is a rootfs with the test passwd and group files.
func newRootfs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"etc/passwd": testPasswd, "etc/group": testGroup})
	return dir
}

// testInput is a minimal valid Input: run "true" in a fresh rootfs, with
// fixed engine limits.
func testInput(t *testing.T) Input {
	t.Helper()
	return Input{
		ID:         testID,
		Rootfs:     newRootfs(t),
		Config:     &container.Config{Cmd: []string{"true"}},
		HostConfig: &container.HostConfig{},
		HostRlimits: map[string]Rlimit{
			"nofile":  {Soft: 1048576, Hard: 1048576},
			"nproc":   {Soft: 63000, Hard: 63000},
			"core":    {Soft: 0, Hard: math.MaxUint64},
			"memlock": {Soft: 8 << 20, Hard: 8 << 20},
		},
	}
}

func build(t *testing.T, in Input) *specs.Spec {
	t.Helper()
	s, _, err := Build(in)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return s
}

func findMount(s *specs.Spec, dst string) (specs.Mount, bool) {
	for _, m := range s.Mounts {
		if m.Destination == dst {
			return m, true
		}
	}
	return specs.Mount{}, false
}

func namespace(s *specs.Spec, t specs.LinuxNamespaceType) (specs.LinuxNamespace, bool) {
	for _, ns := range s.Linux.Namespaces {
		if ns.Type == t {
			return ns, true
		}
	}
	return specs.LinuxNamespace{}, false
}
