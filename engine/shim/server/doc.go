// Package server is the hutch-shim process: it holds one container's
// stdio, writes its json-file log, serves the socket protocol of package
// wire, reaps, and records the exit status. The engine never imports it;
// it talks to it through package shim.
//
// The shim lives as long as its container, so it stays small (docs/design.md, Performance goals):
// libcontainer is in hutch-runtime (package oci), which the shim starts for
// each step that needs it, and the shim links no net, encoding/json,
// log/slog or os/signal (see cmd/hutch-shim/deps_test.go).
//
// Lifecycle: Create (in package shim) spawns "hutch-shim run BUNDLE", or
// hands the bundle to a warm shim. The shim has hutch-runtime create the
// container, whose init waits on libcontainer's exec fifo and becomes the
// shim's child when hutch-runtime exits; it opens the socket and reports
// the pid on fd 3. The client's Start op opens the fifo and returns once
// the init has exec'd the command (signal_linux.go tells why). When the init is reaped the shim waits for the output to drain into
// the log and to attached clients, removes the container, writes the exit
// file, answers waiters, and exits.
package server
