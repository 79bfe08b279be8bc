package main

import (
	"os/exec"
	"strings"
	"testing"
)

// hutch-ns is the process that waits for the daemon's whole life (and,
// with live restore, the keeper of its namespaces, which runs the
// namespace set-up of rootless/child): it must stay small, so it links
// rootlesskit and none of the engine's libraries.
func TestHutchNSLinksNoEngine(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list found only %v: the test lost track of the dependencies", deps)
	}
	forbidden := []string{
		"github.com/hutch-engine/hutch/engine", "github.com/hutch-engine/hutch/apiserver",
		"github.com/hutch-engine/hutch/storage", "github.com/hutch-engine/hutch/daemon",
		"github.com/hutch-engine/hutch/config", "github.com/hutch-engine/hutch/rootless/network",
		"go.podman.io/", "github.com/moby/moby", "github.com/opencontainers/runc", "github.com/urfave/cli",
	}
	for _, d := range deps {
		for _, f := range forbidden {
			if strings.HasPrefix(d, f) {
				t.Errorf("hutch-ns links %s", d)
			}
		}
	}
}
