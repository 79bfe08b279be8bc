package storage

import (
	"context"
	"slices"
	"testing"
)

// Layers that no image or container uses (a pull or commit killed between
// storing its layers and recording its image) are gone after the next
// Open; the layers of images and containers stay.
func TestOpenSweepsOrphanLayers(t *testing.T) {
	dir := t.TempDir()
	opts := Options{GraphRoot: dir + "/graph", RunRoot: dir + "/run", Driver: DriverVFS, SingleUID: singleUID(t)}
	ctx := context.Background()
	s, err := Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct{ id, parent string }{
		{"base", ""},     // under the image
		{"top", "base"},  // the image's top layer
		{"lost", "base"}, // an interrupted pull's layers: lost and its child
		{"lostchild", "lost"},
		{"alone", ""}, // an interrupted commit's layer
	} {
		if _, err := s.cs.CreateLayer(l.id, l.parent, nil, "", false, nil); err != nil {
			t.Fatalf("layer %s: %v", l.id, err)
		}
	}
	if _, err := s.cs.CreateImage("img", []string{"docker.io/library/x:1"}, "top", "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.cs.CreateContainer("ctr", nil, "img", "", "", nil); err != nil {
		t.Fatal(err)
	}
	ctr, err := s.cs.Container("ctr")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	layers, err := s.cs.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range layers {
		ids = append(ids, l.ID)
	}
	slices.Sort(ids)
	want := []string{"base", ctr.LayerID, "top"}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("layers after reopening: %q, want %q", ids, want)
	}
}
