// Package server is the hutch-shim process: it creates and runs one
// container with libcontainer, holds its stdio, writes its json-file log,
// serves the socket protocol of package shim, reaps, and records the exit
// status. The engine never imports it; it talks to it through package shim.
//
// Lifecycle: Create (in package shim) spawns "hutch-shim run BUNDLE"; the
// shim makes the container with Container.Start, so libcontainer's init is
// created and waits on the exec fifo, opens the socket and reports the pid
// on fd 3. The client's Start op opens the fifo (Container.Exec) and the
// command runs. When the init is reaped the shim waits for the output to
// drain into the log and to attached clients, destroys the container,
// writes the exit file, answers waiters, and exits.
package server
