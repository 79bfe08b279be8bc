// Package wire is what passes between the engine, the shim and
// hutch-runtime: the shim's socket protocol (a JSON line each way, then
// Docker's stdcopy frames), the files of a bundle (shim.json, exit.json),
// the request hutch-runtime answers, and the error classes that survive the
// trip.
//
// The shim links this package and little else: it idles for the whole life
// of its container, and every package it links is resident memory
// (docs/design.md, Performance goals: 3 MiB per shim). No net, no libcontainer, no log/slog here.
package wire
