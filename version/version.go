// Package version holds hutch's own version, stamped at build time by the
// Makefile (-ldflags -X), so the CLI can print it without linking the engine.
package version

import "runtime/debug"

// Version and Commit are set with -ldflags "-X github.com/hutch-engine/hutch/version.Version=…".
var (
	Version = "0.1.0-dev"
	Commit  = ""
)

// GitCommit returns the commit the binary was built from: the stamped one,
// else the one the Go toolchain recorded.
func GitCommit() string {
	if Commit != "" {
		return Commit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 7 {
				return s.Value[:7]
			}
		}
	}
	return "unknown"
}
