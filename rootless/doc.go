// Package rootless owns everything about namespaces for the daemon: it
// re-executes hutch inside a user and mount namespace with rootlesskit (used
// as a library), serves the rootlesskit child side, and tells each process of
// the tree which part it plays.
//
// The tree, as DESIGN §2 draws it:
//
//	hutch daemon            (host: rootlesskit parent, newuidmap, slirp4netns, port driver)
//	└─ hutch daemon         (rootlesskit child: user+mount ns, copy-up of /etc and /run)
//	   └─ hutch daemon      (the engine: uid 0 in the user namespace)
//
// The network namespace is detached: the engine stays in the host's network
// namespace, containers join the one slirp4netns serves.
package rootless
