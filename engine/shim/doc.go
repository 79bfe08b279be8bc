// Package shim is the engine's side of the per-container shim (the
// hutch-shim binary, implemented by package shim/server): it spawns shims,
// talks to them over their unix sockets, and reads what they leave behind
// (the exit file, and the json-file log through package jsonlog).
//
// One shim runs per running container, in its own process group, and outlives
// the engine. It has hutch-runtime (package shim/oci) create the container
// with libcontainer in the engine's namespaces (uid 0 in rootlesskit's user
// namespace, or real root), is a subreaper, holds the container's stdio,
// writes Docker's json-file log, serves attach/resize/kill/wait/exec, and
// writes the exit status atomically before it exits.
//
// How the engine maps Docker's calls:
//
//   - docker run = create, attach, start, wait: POST /containers/create only
//     records the container. POST /start calls Create (the shim starts, the
//     container is created and its init waits for Start), then Attach for
//     every attach request that came before, then Client.Start. Attach
//     returns once the shim has registered the client, so no output is
//     lost. Start alone (no attachers) can use Start.
//   - wait: Client.Wait; when the shim has exited it answers from the exit
//     file. After an engine crash: Connect(socket) for live shims, wire.ReadExit
//     for those that are gone (ErrNoShim from Connect).
//   - logs: jsonlog.Read on LogPath (since/until/tail/follow); follow stops when
//     the caller closes Done, i.e. once Wait returned.
//   - kill/stop: Client.Kill with the signal; exit code 128+N for death by
//     signal N.
//   - exec: Client.Exec with an OCI process (the engine keeps exec records;
//     the shim keeps the process, its stdio and its exit code); the end of
//     an exec that no stream follows (detached) through Client.WaitExec.
//   - after kill -9 of a shim (Connect says ErrNoShim and wire.ReadExit finds
//     nothing): Delete kills and removes the orphaned container.
//
// Errors: a command that cannot run (exec: "x": executable file not found
// in $PATH) is a *StartError, classed errdefs.ErrInvalidArgument with exit
// code 127 (126 for permission denied) like Docker's 400 "OCI runtime
// create failed"; other start failures are errdefs.ErrUnknown (500, exit
// code 128). No exit file is written for a container that never started.
//
// Files: the engine writes BundleDir/config.json (OCI spec with an absolute
// root.path, mounted by the engine); Create writes BundleDir/shim.json and
// the shim logs its own diagnostics to BundleDir/shim.log. StateDir (the
// libcontainer root) must not be nested with hutch-runtime's directory,
// or every start copies the binary into a memfd (docs/design.md, Platform constraints).
//
// The exit file is written atomically (temp file, rename) but not fsynced:
// it survives the death of the engine or the shim, not a power loss, after
// which the engine's reconcile marks the container's end anyway.
//
// Limits: OOMKilled is known
// only where a memory cgroup exists (real root); a tty's stdin cannot be
// closed, so StdinOnce only applies without a tty, as in Docker.
package shim
