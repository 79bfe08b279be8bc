package storage

import (
	"testing"
)

// storedHex is the store's own ID (its config's digest) of the image of
// ID or name ref, for calls on containers/storage itself.
func storedHex(t testing.TB, s *Store, ref string) string {
	t.Helper()
	img, err := s.lookup(ref)
	if err != nil {
		t.Fatal(err)
	}
	return img.ID
}

// idByConfig is the ID of the image whose config has digest configDigest:
// its manifest's digest, never the config's.
func idByConfig(t testing.TB, s *Store, configDigest string) string {
	t.Helper()
	img, err := s.lookup(configDigest)
	if err != nil {
		t.Fatal(err)
	}
	id := s.idOf(img)
	if id == configDigest {
		t.Fatalf("image %s is named by its config's digest", configDigest)
	}
	return id
}
