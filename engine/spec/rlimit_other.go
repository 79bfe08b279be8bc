//go:build !linux

package spec

// getrlimit knows no limits off Linux: containers run only there.
func getrlimit(string) (Rlimit, bool) { return Rlimit{}, false }
