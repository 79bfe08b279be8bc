package main

import (
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The CLI verbs other than `daemon` talk to the daemon through the API or
// look at the host; they never link the engine, the API server, storage or
// the namespace code. Only daemon.go (the verb that is the daemon) and
// main.go (which dispatches rootlesskit's re-executions) may.
func TestCLIVerbsDoNotLinkTheEngine(t *testing.T) {
	forbidden := []string{"/engine", "/apiserver", "/storage", "/daemon", "/rootless"}
	allowed := map[string]bool{"github.com/hutch-engine/hutch/rootless/preflight": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		if f == "daemon.go" || f == "main.go" || strings.HasSuffix(f, "_test.go") {
			continue
		}
		checked++
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if allowed[p] || !strings.HasPrefix(p, "github.com/hutch-engine/hutch/") {
				continue
			}
			for _, bad := range forbidden {
				if strings.HasPrefix(strings.TrimPrefix(p, "github.com/hutch-engine/hutch"), bad) {
					t.Errorf("%s imports %s: CLI verbs must go through the API", f, p)
				}
			}
		}
	}
	if checked < 3 {
		t.Fatalf("checked only %d verb files; the test lost track of the CLI", checked)
	}
}

// The engine starts hutch-buildkit for builds and links none of BuildKit's
// solver, worker or control API: every idle engine would carry them
// (their package inits and mapped pages). The classic builder's
// Dockerfile parser is the part of BuildKit it links. Likewise it starts
// hutch-swarm for swarm mode and links none of SwarmKit (nor Raft).
func TestEngineDoesNotLinkBuildKit(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps listed %d packages", len(deps))
	}
	for _, p := range deps {
		for _, bad := range []string{"github.com/moby/buildkit/solver", "github.com/moby/buildkit/control", "github.com/moby/buildkit/worker", "github.com/containerd/containerd/v2", "go.etcd.io/bbolt", "github.com/moby/swarmkit/v2", "go.etcd.io/raft/v3", "github.com/hutch-engine/hutch/swarm/executor", "github.com/hutch-engine/hutch/swarm/convert"} {
			if p == bad || strings.HasPrefix(p, bad+"/") {
				t.Errorf("the hutch binary links %s", p)
			}
		}
	}
}
