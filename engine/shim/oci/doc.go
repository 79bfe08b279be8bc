// Package oci is hutch-runtime, the libcontainer side of the shim. The shim
// (package server) stays small for its container's whole life; for each
// step that needs libcontainer it starts hutch-runtime, which does that one
// step and exits:
//
//   - create: the container, its init waiting on libcontainer's exec fifo
//     with the stdio the shim sent; the init is reparented to the shim (a
//     subreaper) when hutch-runtime exits, and the shim opens the fifo to
//     start the command;
//   - exec: a process in the running container, reparented the same way;
//   - pause and resume: the cgroup freezer;
//   - delete: the stopped container's cgroup, hooks and state, reporting
//     whether the OOM killer struck.
//
// libcontainer re-executes the hutch-runtime binary as the container's init
// ("hutch-runtime init"), which is why this is a binary of its own: the
// shim does not map libcontainer, the init does not map the shim.
//
// Requests arrive on wire.RuntimeFD (package wire); "hutch-runtime delete
// BUNDLE" is the engine's cleanup after a shim that died.
package oci
