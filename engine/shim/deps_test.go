package shim

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// The engine imports this package: it must not pull libcontainer (and its
// cgo nsenter constructor) into the daemon; only hutch-runtime links it.
func TestClientImportsNoLibcontainer(t *testing.T) {
	// The package's directory, also when the compiled test runs elsewhere.
	_, self, _, _ := runtime.Caller(0)
	files, err := filepath.Glob(filepath.Join(filepath.Dir(self), "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.Contains(p, "opencontainers/runc") || strings.Contains(p, "opencontainers/cgroups") || strings.HasSuffix(p, "engine/shim/server") || strings.HasSuffix(p, "engine/shim/oci") {
				t.Errorf("%s imports %s", f, p)
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no source files checked")
	}
}
