package container

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"github.com/hutch-engine/hutch/internal/atomicfile"
)

// Records is what the engine needs from a container store. Every method
// classes its errors with errdefs, in Docker's words where Docker has some:
//
//   - Create: ErrInvalidArgument for a bad name or ID, ErrConflict when the
//     name is taken.
//   - Get: ErrInvalidArgument for an empty or ambiguous reference,
//     ErrNotFound when nothing matches.
//   - List: ErrInvalidArgument for a bad filter, ErrNotFound for an unknown
//     before/since container.
//   - Update, Delete, Rename, Wait take a full ID (resolve references with
//     Get first) and give ErrNotFound when there is no such container.
//     Update returns fn's error unchanged; Delete gives ErrConflict for a
//     container whose process still exists; Rename gives ErrInvalidArgument
//     and ErrConflict as Docker's rename does.
//   - Failures to write the disk are unclassed (500).
type Records interface {
	Create(ctx context.Context, c *Container) error
	Get(ctx context.Context, ref string) (*Container, error)
	List(ctx context.Context, opts ListOptions) ([]*Container, error)
	Update(ctx context.Context, id string, fn func(*Container) error) error
	Delete(ctx context.Context, id string) error
	Rename(ctx context.Context, id, name string) error
	Wait(ctx context.Context, id string, cond WaitCondition) (<-chan WaitResult, error)
	Reconcile(ctx context.Context, probe ProbeFunc, remove RemoveFunc) (ReconcileReport, error)
	// Dir is the directory of a container's record, which the engine may
	// use for the container's other files; Delete removes all of it.
	Dir(id string) string
}

var _ Records = (*Store)(nil)

// Store keeps container records as <root>/<id>/container.json, one JSON
// file per container written atomically, and all of them in memory: reads
// never touch the disk. Each container has a lock, taken by Update, Delete
// and Rename, so that changes to one container are serialised while
// others proceed.
type Store struct {
	root string
	log  *slog.Logger
	now  func() time.Time

	mu      sync.RWMutex
	byID    map[string]*entry
	names   map[string]string // "/name" → id, including names being created
	skipped []LoadError

	trash sync.WaitGroup // directories of deleted records being removed
}

// entry is one container in memory. rec and data are replaced, never
// changed, under both lock and Store.mu; readers holding either see a
// consistent pair.
type entry struct {
	lock    chan struct{} // per-container lock; a channel so that waiting honours ctx
	rec     *Container    // committed record, as stored on disk; nil while Create writes it
	deleted bool
	waiters []*waiter
}

func (e *entry) acquire(ctx context.Context) error {
	select {
	case e.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *entry) release() { <-e.lock }

// LoadError is a record NewStore could not load. The record stays on disk
// untouched for a human to look at; the container is not listed.
type LoadError struct {
	Dir string
	Err error
}

func (e LoadError) Error() string { return e.Dir + ": " + e.Err.Error() }

func (e LoadError) Unwrap() error { return e.Err }

// Option changes how NewStore builds a Store.
type Option func(*Store)

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(s *Store) { s.log = l } }

// WithClock sets the clock used for Created times (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// NewStore opens the records under root, creating root (0700) if needed,
// and loads them all. A record that cannot be read is logged, listed by
// Skipped, and left out; it does not stop the others.
func NewStore(root string, opts ...Option) (*Store, error) {
	s := &Store{
		root:  root,
		log:   slog.Default(),
		now:   time.Now,
		byID:  map[string]*entry{},
		names: map[string]string{},
	}
	for _, o := range opts {
		o(s)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("container records: %w", err)
	}
	if err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

// Skipped lists the records NewStore could not load.
func (s *Store) Skipped() []LoadError {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.skipped)
}

// Dir is the directory of the record of container id.
func (s *Store) Dir(id string) string { return filepath.Join(s.root, id) }

func (s *Store) recordPath(id string) string { return filepath.Join(s.root, id, recordFile) }

func (s *Store) load() error {
	ents, err := os.ReadDir(s.root)
	if err != nil {
		return fmt.Errorf("container records: %w", err)
	}
	var renamed []*Container
	for _, de := range ents {
		dir := filepath.Join(s.root, de.Name())
		if isScratch(de.Name()) {
			// A deletion or write interrupted by a crash.
			if err := os.RemoveAll(dir); err != nil {
				s.log.Warn("container records: removing leftover", "path", dir, "err", err)
			}
			continue
		}
		c, err := s.loadOne(de)
		if err != nil {
			s.skipped = append(s.skipped, LoadError{Dir: dir, Err: err})
			s.log.Error("container records: skipping unreadable record", "dir", dir, "err", err)
			continue
		}
		if c == nil {
			continue
		}
		if prev, taken := s.names[c.Name]; taken || ValidateName(c.Name) != nil {
			// Only a damaged store gets here; keep the container
			// reachable under its ID rather than drop it.
			s.log.Error("container records: name unusable, renaming", "id", c.ID, "name", c.Name, "holder", prev)
			c.Name = "/" + c.ID
			renamed = append(renamed, c)
		}
		s.byID[c.ID] = &entry{lock: make(chan struct{}, 1), rec: c}
		s.names[c.Name] = c.ID
	}
	for _, c := range renamed {
		data, err := json.Marshal(c)
		if err == nil {
			err = atomicfile.Write(s.recordPath(c.ID), data, 0o600, durable)
		}
		if err != nil {
			s.log.Error("container records: saving renamed record", "id", c.ID, "err", err)
		}
	}
	return nil
}

// loadOne reads one record directory; (nil, nil) means nothing to load.
func (s *Store) loadOne(de os.DirEntry) (*Container, error) {
	if !de.IsDir() {
		return nil, errors.New("not a record directory")
	}
	id := de.Name()
	if !validID(id) {
		return nil, errors.New("directory name is not a container ID")
	}
	dir := s.Dir(id)
	files, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if isScratch(f.Name()) {
			os.Remove(filepath.Join(dir, f.Name()))
		}
	}
	data, err := os.ReadFile(s.recordPath(id))
	if errors.Is(err, os.ErrNotExist) && onlyScratch(files) {
		// Create was interrupted before the record was written.
		s.log.Warn("container records: removing unfinished create", "dir", dir)
		return nil, os.RemoveAll(dir)
	}
	if err != nil {
		return nil, err
	}
	c, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", recordFile, err)
	}
	if c.ID != id {
		return nil, fmt.Errorf("record is for container %q", c.ID)
	}
	switch c.State.Status {
	case StatusCreated, StatusRunning, StatusPaused, StatusRestarting, StatusExited, StatusDead:
	default:
		return nil, fmt.Errorf("unknown status %q", c.State.Status)
	}
	return c, nil
}

func onlyScratch(files []os.DirEntry) bool {
	for _, f := range files {
		if !isScratch(f.Name()) {
			return false
		}
	}
	return true
}

// Create records a new container. It fills in what the caller left empty,
// in c itself so that the caller learns it: ID (NewID), Name (generated
// adjective_noun when empty; given names are checked and get their "/"),
// Created (now) and State.Status (created; anything else is refused). The
// name is reserved before anything is written, so that of two concurrent
// creates with one name exactly one succeeds.
func (s *Store) Create(ctx context.Context, c *Container) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.Name != "" {
		if err := ValidateName(c.Name); err != nil {
			return err
		}
		c.Name = canonicalName(c.Name)
	}
	if c.ID == "" {
		c.ID = NewID()
	} else if err := checkID(c.ID); err != nil {
		return err
	}
	if c.State.Status == "" {
		c.State.Status = StatusCreated
	}
	if c.State.Status != StatusCreated || c.State.Removing {
		return fmt.Errorf("new container in state %q: %w", c.State.Status, errdefs.ErrInvalidArgument)
	}
	if c.Created.IsZero() {
		c.Created = s.now()
	}
	c.Created = c.Created.UTC()

	e := &entry{lock: make(chan struct{}, 1)}
	if err := s.reserve(c, e); err != nil {
		return err
	}
	data, err := json.Marshal(c)
	if err == nil {
		err = s.writeNew(c.ID, data)
	}
	if err != nil {
		s.mu.Lock()
		delete(s.byID, c.ID)
		delete(s.names, c.Name)
		s.mu.Unlock()
		return fmt.Errorf("saving container %s: %w", c.ID, err)
	}
	rec, _ := decode(data)
	s.mu.Lock()
	e.rec = rec
	s.mu.Unlock()
	return nil
}

// reserve claims c's ID and name (generating one if empty) for e.
func (s *Store) reserve(c *Container, e *entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.byID[c.ID]; dup {
		return fmt.Errorf("container ID %s is already in use: %w", c.ID, errdefs.ErrConflict)
	}
	if c.Name == "" {
		c.Name = s.freeNameLocked(c.ID)
	} else if holder, taken := s.names[c.Name]; taken {
		return nameConflict(c.Name, holder)
	}
	s.byID[c.ID] = e
	s.names[c.Name] = c.ID
	return nil
}

// freeNameLocked picks an unused generated name; like Docker, after a few
// collisions it falls back to the short ID (and the full ID should someone
// have taken that as a name).
func (s *Store) freeNameLocked(id string) string {
	for attempt := range 6 {
		if n := randomName(attempt); s.names[n] == "" {
			return n
		}
	}
	if n := "/" + ShortID(id); s.names[n] == "" {
		return n
	}
	return "/" + id
}

func nameConflict(name, holder string) error {
	return errdefs.ErrConflict.WithMessage(fmt.Sprintf(
		"Conflict. The container name %q is already in use by container %q. You have to remove (or rename) that container to be able to reuse that name.",
		name, holder))
}

// writeNew creates the record directory and its first record durably.
func (s *Store) writeNew(id string, data []byte) error {
	dir := s.Dir(id)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	if err := syncDir(s.root); err != nil {
		os.RemoveAll(dir)
		return err
	}
	if err := atomicfile.Write(s.recordPath(id), data, 0o600, durable); err != nil {
		os.RemoveAll(dir)
		return err
	}
	return nil
}

// Get finds a container by full ID, by name (with or without the leading
// "/"), or by a unique ID prefix, in that order, as dockerd does, and
// returns a copy of its record.
func (s *Store) Get(ctx context.Context, ref string) (*Container, error) {
	s.mu.RLock()
	e, err := s.lookupLocked(ref)
	var rec *Container
	if err == nil {
		rec = e.rec
	}
	s.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	// Records are replaced, never changed: copying outside the lock is safe.
	return deepCopy(rec), nil
}

func noSuchContainer(ref string) error {
	return errdefs.ErrNotFound.WithMessage("No such container: " + ref)
}

func (s *Store) lookupLocked(ref string) (*entry, error) {
	if ref == "" {
		return nil, errdefs.ErrInvalidArgument.WithMessage(`invalid name or ID supplied: ""`)
	}
	if e := s.byID[ref]; e != nil && e.rec != nil {
		return e, nil
	}
	if id, ok := s.names[canonicalName(ref)]; ok {
		if e := s.byID[id]; e != nil && e.rec != nil {
			return e, nil
		}
	}
	var found *entry
	for id, e := range s.byID {
		if e.rec == nil || !strings.HasPrefix(id, ref) {
			continue
		}
		if found != nil {
			return nil, errdefs.ErrInvalidArgument.WithMessage("multiple IDs found with provided prefix: " + ref)
		}
		found = e
	}
	if found == nil {
		return nil, noSuchContainer(ref)
	}
	return found, nil
}

// entry finds a committed container by full ID.
func (s *Store) entry(id string) (*entry, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.byID[id]
	if e == nil || e.rec == nil || e.deleted {
		return nil, noSuchContainer(id)
	}
	return e, nil
}

// locked runs fn holding id's lock, with the committed record. It gives
// ErrNotFound when the container is gone, also when it went while waiting.
func (s *Store) locked(ctx context.Context, id string, fn func(e *entry, rec *Container) error) error {
	e, err := s.entry(id)
	if err != nil {
		return err
	}
	if err := e.acquire(ctx); err != nil {
		return err
	}
	defer e.release()
	s.mu.RLock()
	rec, deleted := e.rec, e.deleted
	s.mu.RUnlock()
	if deleted {
		return noSuchContainer(id)
	}
	return fn(e, rec)
}
