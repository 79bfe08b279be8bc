package storage

import (
	"errors"
	"fmt"

	cstorage "go.podman.io/storage"
)

// sweepOrphanLayers deletes the layers that no image and no container
// uses, children first, and returns how many went. A pull, load, import
// or commit stores its layers before it records the image; killed in
// between, it leaves layers nothing refers to, which nothing would ever
// delete. containers/storage itself removes only the layers it had not
// finished writing. Open runs it before the store serves anything, when no
// operation can be about to record an image on such a layer.
func sweepOrphanLayers(cs cstorage.Store) (int, error) {
	layers, err := cs.Layers()
	if err != nil {
		return 0, err
	}
	images, err := cs.Images()
	if err != nil {
		return 0, err
	}
	containers, err := cs.Containers()
	if err != nil {
		return 0, err
	}
	parent := make(map[string]string, len(layers))
	for _, l := range layers {
		parent[l.ID] = l.Parent
	}
	used := map[string]bool{}
	use := func(id string) {
		for ; id != "" && !used[id]; id = parent[id] {
			used[id] = true
		}
	}
	for _, img := range images {
		use(img.TopLayer)
		for _, id := range img.MappedTopLayers {
			use(id)
		}
	}
	for _, c := range containers {
		use(c.LayerID)
	}
	// The children of an unused layer are unused too: delete leaves until
	// none is left.
	children := map[string]int{}
	var orphans []string
	for _, l := range layers {
		if !used[l.ID] {
			orphans = append(orphans, l.ID)
			children[l.Parent]++
		}
	}
	removed := 0
	var errs []error
	for len(orphans) > 0 {
		var rest []string
		for _, id := range orphans {
			if children[id] > 0 {
				rest = append(rest, id)
				continue
			}
			if err := cs.DeleteLayer(id); err != nil && !errors.Is(err, cstorage.ErrLayerUnknown) {
				errs = append(errs, fmt.Errorf("layer %s: %w", id, err))
				continue
			}
			removed++
			children[parent[id]]--
		}
		if len(rest) == len(orphans) {
			break // the rest sit above layers that could not be deleted
		}
		orphans = rest
	}
	return removed, errors.Join(errs...)
}
