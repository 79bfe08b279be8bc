package container

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/hutch-engine/hutch/internal/atomicfile"
)

// Update changes container id under its lock: fn gets a copy of the
// record, and what fn leaves in it is written to disk and then becomes the
// record. If fn fails, or the write does, nothing changes, on disk or in
// memory. fn may take its time (it can start a process and record the
// result), but must not call the Store for the same container. fn may not
// change ID or Name (Rename changes names).
//
// When fn ends a run (State.SetExited, SetRestarting) or otherwise takes
// the container from running to stopped, Wait's not-running and next-exit
// waiters are answered.
func (s *Store) Update(ctx context.Context, id string, fn func(*Container) error) error {
	return s.locked(ctx, id, func(e *entry, old *Container) error {
		c := deepCopy(old)
		if err := fn(c); err != nil {
			return err
		}
		if c.ID != old.ID || c.Name != old.Name {
			return fmt.Errorf("container %s: Update may not change ID or name", id)
		}
		ended := c.State.ended || old.State.Running() && !c.State.Running()
		return s.commit(e, c, ended)
	})
}

// commit persists c as e's record and swaps it in; the caller holds e.lock.
func (s *Store) commit(e *entry, c *Container, ended bool) error {
	data, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("encoding container %s: %w", c.ID, err)
	}
	// The caller holds the container's lock: Swap's calls for the record
	// do not overlap.
	if err := atomicfile.Swap(s.recordPath(c.ID), data, 0o600); err != nil {
		return fmt.Errorf("saving container %s: %w", c.ID, err)
	}
	rec, err := decode(data)
	if err != nil {
		return err
	}
	s.mu.Lock()
	e.rec = rec
	if ended {
		s.wakeLocked(e, false)
	}
	s.mu.Unlock()
	return nil
}

// Delete removes container id: its record directory with everything in
// it, and its name, which becomes free. It refuses (ErrConflict) while a
// process exists; stop or kill it first. Anything mounted under the
// directory must be unmounted before. Wait's waiters are answered.
func (s *Store) Delete(ctx context.Context, id string) error {
	return s.locked(ctx, id, func(e *entry, rec *Container) error {
		if rec.State.Running() {
			return errdefs.ErrConflict.WithMessage(fmt.Sprintf(
				"cannot remove container %q: container is %s: stop the container before removing or force remove",
				rec.Name, rec.State.Status))
		}
		return s.deleteLocked(e, rec)
	})
}

// deleteLocked removes rec for good; the caller holds e.lock. The
// directory is renamed away first: once that rename is made the record is
// gone, however far the RemoveAll gets. The rename is not synced and the
// RemoveAll runs in the background, as dockerd's removal does neither on
// its path: under concurrent starts the directory's fsync and the
// unlinks (each a synchronous discard on a filesystem mounted with
// -o discard) were 30 ms of a removal. A power loss before the rename
// reaches the disk brings the record back, as an exited container;
// Load removes a trash directory a crash left.
func (s *Store) deleteLocked(e *entry, rec *Container) error {
	dir := s.Dir(rec.ID)
	trash := filepath.Join(s.root, trashPrefix+rec.ID)
	if err := os.RemoveAll(trash); err != nil {
		return fmt.Errorf("removing container %s: %w", rec.ID, err)
	}
	if err := os.Rename(dir, trash); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing container %s: %w", rec.ID, err)
	}
	s.mu.Lock()
	delete(s.byID, rec.ID)
	if s.names[rec.Name] == rec.ID {
		delete(s.names, rec.Name)
	}
	e.deleted = true
	s.wakeLocked(e, true)
	s.mu.Unlock()
	s.trash.Add(1)
	go func() {
		defer s.trash.Done()
		if err := os.RemoveAll(trash); err != nil {
			// The record is gone; the next start sweeps the rest.
			s.log.Warn("container records: removing directory", "id", rec.ID, "err", err)
		}
	}()
	return nil
}

// Close waits for the removals of deleted records' directories.
func (s *Store) Close() { s.trash.Wait() }

// Rename gives container id a new name, with Docker's rules and messages:
// the name is checked like a new one, must differ from the current one and
// be free. The old name is released once the new one is on disk.
func (s *Store) Rename(ctx context.Context, id, name string) error {
	name = strings.TrimSpace(name)
	if strings.TrimPrefix(name, "/") == "" {
		return errdefs.ErrInvalidArgument.WithMessage("Neither old nor new names may be empty")
	}
	// Docker checks the name after adding the "/", and its message shows it.
	name = canonicalName(name)
	if err := ValidateName(name); err != nil {
		return fmt.Errorf("Error when allocating new name: %w", err)
	}
	return s.locked(ctx, id, func(e *entry, old *Container) error {
		if old.Name == name {
			return errdefs.ErrInvalidArgument.WithMessage("Renaming a container with the same name as its current name")
		}
		s.mu.Lock()
		if holder, taken := s.names[name]; taken {
			s.mu.Unlock()
			return fmt.Errorf("Error when allocating new name: %w", nameConflict(name, holder))
		}
		s.names[name] = id
		s.mu.Unlock()

		c := deepCopy(old)
		c.Name = name
		err := s.commit(e, c, false)
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil {
			delete(s.names, name)
			return err
		}
		delete(s.names, old.Name)
		return nil
	})
}
