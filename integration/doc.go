// Package integration tests the real hutch daemon, started as the
// unprivileged user that runs the tests, through the real docker CLI and the
// Go SDK. Build with the "integration" tag; `make test` runs them.
package integration
