// Package container owns hutch's container records: what a container is
// (Container), the states it goes through and which changes are legal
// (State), and where records live (Store: one JSON file per container,
// written atomically, with a lock per container).
//
// It is the domain layer under the engine: no HTTP, no runtime. The engine
// asks it whether an operation is allowed (State.CheckStart, CheckRemove…),
// does the work (shim, storage), and records the outcome through
// Store.Update with the matching transition (SetRunning, SetExited…).
// Refusals carry Docker's wording and an errdefs class
// (github.com/containerd/errdefs), so the API server maps them to Docker's
// status codes without knowing why they happened: 304 for a start of a
// running container, 409 for a removal of one, 404 for an unknown name.
//
// Inspect and Summary turn a record into the wire types of
// github.com/moby/moby/api, filling what dockerd fills and leaving null
// what dockerd leaves null.
//
// After a crash, Store.Reconcile brings every record back in line with
// reality through a probe supplied by the runtime side (the shim knows
// whether a container still runs and how it ended).
package container
