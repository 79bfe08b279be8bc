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

// BuildTime is when the commit the binary was built from was made, as the
// Go toolchain recorded it (RFC 3339), or "" when it recorded none.
func BuildTime() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.time" {
				return s.Value
			}
		}
	}
	return ""
}

// Module is hutch's Go module, which /version names as Docker names its own.
const Module = "github.com/hutch-engine/hutch"
