// Package imagestore is the contract between the engine and its image and
// layer store: the Store interface, made of small interfaces (Rootfs,
// Images, Registry, Archive) that a caller or a test can take alone, and
// the types that cross it. Package storage implements it on
// containers/storage and containers/image; the engine and the image
// service use it. It is a leaf: it imports nothing of hutch's, so that the
// store does not link the engine.
package imagestore
