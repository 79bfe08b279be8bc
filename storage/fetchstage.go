package storage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"go.podman.io/image/v5/types"
	cstorage "go.podman.io/storage"
	graphdriver "go.podman.io/storage/drivers"
)

// stagedLayer is one layer being streamed into a staging directory.
type stagedLayer struct {
	l     *layerFetch
	ready chan struct{} // closed when out or err is set
	out   *graphdriver.DriverWithDifferOutput
	err   error
}

// streamLayers streams the missing layers, at most parallel at a time in
// manifest order, each extracted as it downloads, and commits them in
// order as each one and its parent are done. A layer used twice in the
// image is downloaded twice: a staging directory becomes one layer.
func (s *Store) streamLayers(ctx context.Context, src types.ImageSource, layers []*layerFetch, parallel int, hooked *hookedStore) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var todo []*stagedLayer
	for _, l := range layers {
		if !l.exists {
			todo = append(todo, &stagedLayer{l: l, ready: make(chan struct{})})
		}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		slots := make(chan struct{}, parallel)
		for i, st := range todo {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				for _, rest := range todo[i:] {
					rest.err = ctx.Err()
					close(rest.ready)
				}
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				st.out, st.err = s.stageLayer(ctx, src, st.l, hooked.progress)
				close(st.ready)
				<-slots
			}()
		}
	}()

	committed := 0
	defer func() {
		cancel()
		wg.Wait()
		for _, st := range todo[committed:] {
			if st.out != nil {
				if err := s.cs.CleanupStagedLayer(st.out); err != nil {
					s.log.Warn("storage: cannot remove a staged layer", "dir", st.out.Target, "err", err)
				}
			}
		}
	}()
	for _, st := range todo {
		<-st.ready
		if st.err != nil {
			return st.err
		}
		out := st.out
		st.out = nil // committed or cleaned up by commitStaged
		committed++
		if err := s.commitStaged(st.l, out, hooked); err != nil {
			return err
		}
	}
	return nil
}

// commitStaged makes the staged output layer l. A layer with l's ID that
// exists by now (a concurrent pull or load made it) is kept and the
// staged copy dropped: the store would otherwise replace its content.
func (s *Store) commitStaged(l *layerFetch, out *graphdriver.DriverWithDifferOutput, hooked *hookedStore) error {
	unlock := s.layerLocks.lock(l.id)
	defer unlock()
	tracked := false
	if hooked.progress != nil {
		_, tracked = hooked.progress.extractStart(l.blob.Digest)
	}
	if _, err := s.cs.Layer(l.id); err == nil {
		if err := s.cs.CleanupStagedLayer(out); err != nil {
			s.log.Warn("storage: cannot remove a staged layer", "dir", out.Target, "err", err)
		}
		if tracked {
			hooked.progress.extractDone(l.blob.Digest, true)
		}
		return nil
	}
	if out.RootDirMode == nil && l.parent != "" {
		// The driver gives a layer without a root entry its parent's
		// mode; the owner is set here, as a layer made by PutLayer has it.
		if err := s.inheritRootOwner(l.parent, out.Target); err != nil {
			s.cs.CleanupStagedLayer(out)
			return err
		}
	}
	layer, err := s.cs.ApplyStagedLayer(cstorage.ApplyStagedLayerOptions{
		ID:          l.id,
		ParentLayer: l.parent,
		DiffOutput:  out,
		DiffOptions: &graphdriver.ApplyDiffWithDifferOpts{},
	})
	if err != nil {
		if cerr := s.cs.CleanupStagedLayer(out); cerr != nil {
			s.log.Debug("storage: removing a staged layer after a failed commit", "dir", out.Target, "err", cerr)
		}
		return fmt.Errorf("applying layer %s: %w", l.blob.Digest, err)
	}
	hooked.noteCreated(layer.ID)
	// The driver moved the content and dropped its lock file, and leaves
	// the empty staging directory until shutdown.
	if err := os.Remove(filepath.Dir(out.Target)); err != nil {
		s.log.Debug("storage: staging directory kept", "dir", filepath.Dir(out.Target), "err", err)
	}
	if tracked {
		hooked.progress.extractDone(l.blob.Digest, true)
	}
	return nil
}

// inheritRootOwner gives dir the owner of parent's root directory.
func (s *Store) inheritRootOwner(parent, dir string) error {
	pdir, err := s.cs.DifferTarget(parent)
	if err != nil {
		return err
	}
	pst, err := os.Stat(pdir)
	if err != nil {
		return err
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	want, have := pst.Sys().(*syscall.Stat_t), st.Sys().(*syscall.Stat_t)
	if want.Uid == have.Uid && want.Gid == have.Gid {
		return nil
	}
	if err := os.Lchown(dir, int(want.Uid), int(want.Gid)); err != nil && !s.opts.SingleUID {
		return err
	}
	return nil
}

// keyedLocks serialises the creation of layers with one ID between the
// fetcher's commits and PutLayer (copy.Image, load, import, commit).
type keyedLocks struct {
	mu sync.Mutex
	m  map[string]*keyedLock
}

type keyedLock struct {
	held  chan struct{}
	users int
}

func (k *keyedLocks) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyedLock{}
	}
	l := k.m[key]
	if l == nil {
		l = &keyedLock{held: make(chan struct{}, 1)}
		k.m[key] = l
	}
	l.users++
	k.mu.Unlock()
	l.held <- struct{}{}
	return func() {
		<-l.held
		k.mu.Lock()
		if l.users--; l.users == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}
