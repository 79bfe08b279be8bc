package main

import (
	"go/parser"
	"go/token"
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
