package storage

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/containerd/errdefs"
	cstorage "go.podman.io/storage"
)

// ignorableUnmount reports whether an unmount through containers/storage
// failed only because there was nothing to unmount.
func ignorableUnmount(err error) bool {
	return errors.Is(err, cstorage.ErrContainerUnknown) || errors.Is(err, cstorage.ErrLayerUnknown) || errors.Is(err, cstorage.ErrLayerNotMounted)
}

// deleteRootfs deletes the unmounted writable layer id.
func (s *Store) deleteRootfs(id string) error {
	if err := s.cs.DeleteContainer(id); err != nil {
		if errors.Is(err, cstorage.ErrContainerUnknown) || errors.Is(err, cstorage.ErrNotAContainer) {
			return fmt.Errorf("storage: rootfs %s: %w", id, errdefs.ErrNotFound)
		}
		return fmt.Errorf("storage: deleting the rootfs of %s: %w", id, err)
	}
	return nil
}

// rootfsMounts counts the mounts of each writable layer.
type rootfsMounts struct {
	mu    sync.Mutex
	state map[string]*rootfsMount // by rootfs ID
	locks keyedLocks              // one mount change per rootfs at a time

	noVolatile atomic.Bool // the kernel refused overlay's volatile option
}

// rootfsMount is one writable layer's mount state, changed under its
// rootfs lock.
type rootfsMount struct {
	refs  int
	path  string
	viaCS bool // mounted by containers/storage
	// csClean: containers/storage holds no mount of it (its records, kept
	// in the run root, may hold those of a daemon before this one).
	csClean bool
	layout  *rootfsLayout
}

// rootfsLayout is where a writable layer of the overlay driver lives.
type rootfsLayout struct {
	dir      string   // the layer's directory (diff, work, merged)
	lowers   []string // the image's layers' diff directories, top first
	volatile bool
}

func (l *rootfsLayout) merged() string { return filepath.Join(l.dir, "merged") }

// mountState gives rootfs id's state, made on first use; the caller holds
// the rootfs lock.
func (s *Store) mountState(id string) *rootfsMount {
	s.mounts.mu.Lock()
	defer s.mounts.mu.Unlock()
	if s.mounts.state == nil {
		s.mounts.state = map[string]*rootfsMount{}
	}
	m := s.mounts.state[id]
	if m == nil {
		m = &rootfsMount{}
		s.mounts.state[id] = m
	}
	return m
}

// forgetMount drops rootfs id's state once the layer is deleted.
func (s *Store) forgetMount(id string) {
	s.mounts.mu.Lock()
	defer s.mounts.mu.Unlock()
	delete(s.mounts.state, id)
}

// layout finds (once) where rootfs id's layer and those below it live.
func (s *Store) layout(id string, m *rootfsMount) (*rootfsLayout, error) {
	if m.layout != nil {
		return m.layout, nil
	}
	c, err := s.cs.Container(id)
	if err != nil {
		return nil, fmt.Errorf("storage: rootfs %s: %w", id, classify(err))
	}
	home := filepath.Join(s.opts.GraphRoot, s.cs.GraphDriverName())
	l := &rootfsLayout{dir: filepath.Join(home, c.LayerID)}
	if v, ok := c.Flags["Volatile"].(bool); ok {
		l.volatile = v
	}
	layer, err := s.cs.Layer(c.LayerID)
	for err == nil && layer.Parent != "" {
		l.lowers = append(l.lowers, filepath.Join(home, layer.Parent, "diff"))
		layer, err = s.cs.Layer(layer.Parent)
	}
	if err != nil {
		return nil, fmt.Errorf("storage: layers of rootfs %s: %w", id, classify(err))
	}
	m.layout = l
	return l, nil
}
