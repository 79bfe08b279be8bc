//go:build mips || mipsle || mips64 || mips64le

package oci

// DefaultSignals does nothing on mips, whose struct sigaction has another
// layout (signals_linux.go tells what it does elsewhere).
func DefaultSignals() {}
