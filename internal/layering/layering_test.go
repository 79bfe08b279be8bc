package layering

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/hutch-engine/hutch/"

// rules say, for packages matching a prefix, which of the module's
// packages they may link (directly or through others); a pattern ending
// in "/..." is a subtree.
var rules = []struct {
	pkg     string
	allowed []string
	why     string
}{
	{"engine/imagestore", nil, "the image store's contract is a leaf"},
	{"engine/networking", []string{"engine/container", "internal/..."}, "the network service's contract is a leaf"},
	{"engine/container", []string{"internal/..."}, "the container record is a leaf"},
	{"engine/spec", []string{"internal/..."}, "the spec builder is a leaf"},
	{"engine/images", []string{"engine/images/...", "engine/imagestore/...", "engine/container", "engine/events", "engine/build/buildctx", "internal/..."}, "the image service works on the store's contract and the container records"},
	{"engine/archive", []string{"internal/..."}, "cp's tar code works on a root alone"},
	{"engine/rootfs", []string{"engine/imagestore"}, "the rootfs pool works on the store's Rootfs contract alone"},
	{"storage", []string{"storage/...", "engine/imagestore", "internal/...", "version"}, "storage implements engine/imagestore and links nothing else of the engine"},
	{"engine/network", []string{"engine/network/...", "engine/networking", "engine/container", "internal/..."}, "the network service implements engine/networking"},
	{"rootless/network", []string{"rootless/network/...", "engine/network", "engine/networking", "engine/container", "internal/..."}, "the network driver links the network service only"},
	{"engine/shim", []string{"engine/shim/...", "internal/..."}, "the shim and its client are the engine's part, not its users"},
	{"swarm", []string{"swarm/...", "internal/..."}, "hutch-swarm talks to the engine through its API"},
	{"buildkit", []string{"buildkit/...", "engine/container", "engine/shim/...", "internal/..."}, "hutch-buildkit talks to the engine through its API"},
}

// engineUsers are the only packages that may link the engine package.
var engineUsers = []string{"engine", "apiserver", "daemon", "cmd/hutch"}

func match(pattern, pkg string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

func TestImportDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := 0
	checked := map[string]bool{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, ok := strings.CutPrefix(fields[0], module)
		if !ok {
			continue
		}
		pkgs++
		var deps []string
		for _, d := range fields[1:] {
			if d, ok := strings.CutPrefix(d, module); ok {
				deps = append(deps, d)
			}
		}
		for _, d := range deps {
			if d == "engine" && !matchAny(engineUsers, pkg) {
				t.Errorf("%s links the engine package: only %v may", pkg, engineUsers)
			}
		}
		for _, r := range rules {
			if !match(r.pkg+"/...", pkg) || (pkg != r.pkg && hasOwnRule(pkg, r.pkg)) {
				continue
			}
			checked[r.pkg] = true
			for _, d := range deps {
				if !match(r.pkg+"/...", d) && !matchAny(r.allowed, d) {
					t.Errorf("%s links %s: %s", pkg, d, r.why)
				}
			}
		}
	}
	if pkgs < 30 {
		t.Fatalf("go list listed %d of the module's packages", pkgs)
	}
	for _, r := range rules {
		if !checked[r.pkg] {
			t.Errorf("no package %s: the rule is stale", r.pkg)
		}
	}
}

// hasOwnRule reports whether a more specific rule than parent covers pkg.
func hasOwnRule(pkg, parent string) bool {
	for _, r := range rules {
		if r.pkg != parent && strings.HasPrefix(r.pkg, parent+"/") && match(r.pkg+"/...", pkg) {
			return true
		}
	}
	return false
}

func matchAny(patterns []string, pkg string) bool {
	for _, p := range patterns {
		if match(p, pkg) {
			return true
		}
	}
	return false
}
