// Command hutch-shim is the per-container shim: the engine starts one per
// running container (see package github.com/hutch-engine/hutch/engine/shim).
// It lives as long as its container, so it links neither libcontainer (it
// starts hutch-runtime for that) nor package net: its resident memory is
// the per-container overhead (docs/design.md, Performance goals), and deps_test.go keeps it so.
package main

import (
	"os"
	"runtime"

	"github.com/hutch-engine/hutch/engine/shim/server"
)

func init() {
	// No allocation sampling: its bucket table alone touches pages of a
	// 1.4 MB mapping in every shim.
	runtime.MemProfileRate = 0
}

func main() {
	if err := server.Main(os.Args[1:]); err != nil {
		os.Stderr.WriteString("hutch-shim: " + err.Error() + "\n")
		os.Exit(1)
	}
}
