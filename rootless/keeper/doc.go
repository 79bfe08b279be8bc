// Package keeper keeps a rootless daemon's namespaces alive between engine
// processes (live restore). The keeper is hutch-ns's namespace child: after
// rootless/child's set-up, hutch-ns execs hutch-keeper (Command; a small
// static C program, package rootless/keeper/ckeeper), which holds the user
// and mount namespaces (where the detached network namespace is
// bind-mounted) and runs the port driver's child side, under hutch-ns's
// parent (slirp4netns, the port driver's parent side). It outlives each
// engine and exits once no engine and no container needs it.
//
// An engine does not start inside the keeper: `hutch daemon` on the host
// asks the keeper for its namespaces (descriptors of its user and mount
// namespaces, and the environment that tells a process inside what part
// it plays) and re-executes itself into them (package rootless/nsenter's
// constructor enters them before the Go runtime starts threads). The
// daemon's host process is then the engine, with its pid, stdio and lock,
// and nothing waits beside it.
//
// The protocol, on the state dir's keeper.sock, is versioned (Version) and
// kept stable across upgrades: a newly built `hutch daemon` enters the
// namespaces of a keeper an older build started.
//
//	client → keeper: a Request as one JSON line
//	keeper → client: one byte carrying the user and mount namespaces'
//	                 descriptors (SCM_RIGHTS), then a Reply as one JSON line
//
// The client's connection is the engine's lease: the engine keeps it open
// for its life, and the keeper serves the next client only once it closed.
package keeper
