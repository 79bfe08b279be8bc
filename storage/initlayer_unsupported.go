//go:build !linux

package storage

// Init layers are made only with the overlay drivers (initlayer_linux.go).

func (s *Store) removeInitLayers([]string) {}

func (s *Store) sweepInitLayers() error { return nil }
