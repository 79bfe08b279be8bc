package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A shim idles for its container's whole life, and what it links is
// resident in every one of them (docs/design.md, Performance goals: 3 MiB each). libcontainer and
// cgo belong to hutch-runtime; package net (half a megabyte resident) and
// log/slog are replaced by a few lines of the shim's own.
func TestShimLinksLittle(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list found only %v: the test lost track of the dependencies", deps)
	}
	forbidden := map[string]bool{"net": true, "log/slog": true, "runtime/cgo": true, "os/exec": true}
	forbiddenPrefix := []string{
		"github.com/opencontainers/runc", "github.com/opencontainers/cgroups", "github.com/sirupsen/logrus",
		"github.com/hutch-engine/hutch/engine/shim/oci", "github.com/containerd/console",
	}
	for _, d := range deps {
		if forbidden[d] {
			t.Errorf("hutch-shim links %s", d)
		}
		for _, f := range forbiddenPrefix {
			if strings.HasPrefix(d, f) {
				t.Errorf("hutch-shim links %s", d)
			}
		}
	}
}
