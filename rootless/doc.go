// Package rootless owns everything about namespaces for the daemon on the
// host side: the handover from `hutch daemon` to hutch-ns (ExecHost, Main),
// rootlesskit's parent (used as a library) and hutch's own single-UID
// parent, and the environment that tells each process of the tree which
// part it plays. The child side, run in the engine's process, is package
// rootless/child.
//
// The tree, as docs/architecture.md draws it, with the rootlesskit child and the
// engine in one process:
//
//	hutch-ns daemon         (host: `hutch daemon` after its exec; rootlesskit
//	│                        parent, newuidmap, slirp4netns, port driver)
//	├─ slirp4netns
//	└─ hutch daemon         (rootlesskit child, then the engine: user+mount
//	                         ns, copy-up of /etc and /run, uid 0)
//
// The network namespace is detached: the engine stays in the host's network
// namespace, containers join the one slirp4netns serves.
package rootless
