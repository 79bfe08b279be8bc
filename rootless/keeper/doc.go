// Package keeper keeps a rootless daemon's namespaces alive between engine
// processes (live restore). The keeper is the namespace child (the hutch
// binary after rootless/child's set-up: it holds the user and mount
// namespaces, the detached network namespace's bind mount and the port
// driver's child side), under hutch-ns's parent (slirp4netns, the port
// driver's parent side). It starts each engine itself, on the request of
// a `hutch daemon` on the host, so the engine is born inside the
// namespaces with no setns.
//
// The protocol, on the state dir's keeper.sock, is versioned (Version) and
// meant to stay stable across upgrades: a newly built `hutch daemon` asks
// a keeper started by an older build to run the new engine binary.
//
//	client → keeper: one byte carrying stdin, stdout and stderr (SCM_RIGHTS),
//	                 then a Request as one JSON line
//	keeper → client: a Reply with PID once the engine started (or Err),
//	                 then a Reply with Exit when it ended
//
// The client keeps the connection open while the engine runs: when it
// closes (the daemon's host process was killed), the keeper kills the
// engine, as the parent-death signal did before.
package keeper
