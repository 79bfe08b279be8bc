// Package child is rootlesskit's child side of hutch's namespaces, run in
// the engine's own process: once the parent (hutch-ns) has mapped the ids,
// it detaches the network namespace, copies /etc and /run up, configures
// slirp4netns's tap device and starts the port driver's child side; then
// the same process goes on to serve the API.
//
// rootlesskit's pkg/child always runs a target command and waits for it,
// which cost a whole Go process (24 MB RSS) doing nothing but waiting.
// This package speaks the same protocol (rootlesskit's messages) with the
// same steps, in-process; only what hutch uses is kept (no pid namespace,
// no socket activation, no /etc/hosts or resolv.conf in the state dir).
package child
