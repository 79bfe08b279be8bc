// Package layering holds no code: its test enforces the direction of the
// module's imports. The engine's contracts with its parts are leaf
// packages (engine/imagestore, engine/networking, engine/container), the
// parts (storage, the network service and driver, the shim) implement
// them without linking the engine, and only the API server and the
// daemon's wiring import the engine itself.
package layering
