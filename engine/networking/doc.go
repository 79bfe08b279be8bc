// Package networking is the contract between the engine and the network
// service that gives containers their network (package engine/network,
// with a driver such as rootless/network): the Service interface and the
// types that cross it. It is a leaf beside engine/container, so that the
// network packages implement it without linking the engine.
package networking
